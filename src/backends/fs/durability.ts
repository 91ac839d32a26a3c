/**
 * When a commit is durable against power loss, not just a process crash.
 *
 * The database runs with synchronous=NORMAL (schema.ts): a commit is written
 * to the WAL but not fsynced, so it survives kill -9 but not an OS crash. With
 * fsync on, this module closes that gap off the request path:
 * - `committed()` after every commit arms a timer; within `intervalMs` the WAL
 *   is fdatasync'ed, so power loss loses at most about that much of
 *   acknowledged writes (and the database stays consistent regardless);
 * - `barrier()` resolves once every commit made before the call is durable.
 *   The reaper waits for it before unlinking a blob that a commit stopped
 *   referencing: were the unlink durable and the commit not, the rolled-back
 *   row would point at a missing file.
 *
 * Syncing the WAL file from our own descriptor is sound: fdatasync flushes the
 * file's data whoever wrote it, SQLite has written a commit's frames with
 * write(2) before the commit returns, and frames a checkpoint has copied into
 * the database file were synced there by that checkpoint. Syncs are coalesced.
 * With fsync off both calls are free and nothing is promised past a process
 * crash.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { Coalesced } from './coalesced.js';

export class WalDurability {
  private handle: FileHandle | undefined;
  private readonly sync = new Coalesced(() => this.syncWal());
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly walPath: string,
    readonly enabled: boolean,
    private readonly intervalMs: number,
  ) {}

  committed(): void {
    if (!this.enabled || this.timer !== undefined || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.sync.run().catch(() => {});
    }, this.intervalMs);
    this.timer.unref();
  }

  barrier(): Promise<void> {
    return this.enabled ? this.sync.run() : Promise.resolve();
  }

  private async syncWal(): Promise<void> {
    if (this.handle === undefined) {
      try {
        this.handle = await open(this.walPath, 'r+');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // nothing committed yet
        throw e;
      }
    }
    await this.handle.datasync();
  }

  /** Syncs once more, then releases the descriptor. Call before closing the database. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.barrier().catch(() => {});
    await this.handle?.close().catch(() => {});
    this.handle = undefined;
  }
}
