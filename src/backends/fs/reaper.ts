/**
 * Deferred deletion of blob files that a commit stopped referencing (an
 * overwritten or deleted object, a replaced or unused part, an aborted
 * upload).
 *
 * A condemned blob is unlinked only when both hold:
 * 1. the commit that dropped it is durable (WalDurability.barrier): otherwise
 *    power loss could roll the row back to a blob that is gone;
 * 2. no reader holds it: GetObject promises the bytes of exactly the version
 *    it returned, even if the key is overwritten before or while they stream.
 *    Readers pin their blobs (see object-stream.ts); a condemned blob that is
 *    pinned is unlinked when its last pin goes.
 *
 * Pins are taken in the same tick as the row is read, and a blob is condemned
 * only once no row references it, so a pin can never be taken on a blob after
 * the reaper decided to unlink it. State here is in memory only: a crash
 * simply leaves unreferenced files, which the garbage collection at open
 * removes.
 */
import type { BlobStore } from './blobs.js';
import type { WalDurability } from './durability.js';

export class BlobReaper {
  private readonly pins = new Map<string, number>();
  private readonly awaitingReaders = new Set<string>();
  private queue: string[] = [];
  private draining: Promise<void> | null = null;

  constructor(
    private readonly blobs: BlobStore,
    private readonly durability: WalDurability,
  ) {}

  pin(ids: readonly string[]): void {
    for (const id of ids) this.pins.set(id, (this.pins.get(id) ?? 0) + 1);
  }

  unpin(ids: readonly string[]): void {
    for (const id of ids) {
      const count = this.pins.get(id) ?? 0;
      if (count > 1) {
        this.pins.set(id, count - 1);
        continue;
      }
      this.pins.delete(id);
      // Already past the durability barrier when it was parked here.
      if (this.awaitingReaders.delete(id)) void this.blobs.remove(id);
    }
  }

  /** Called right after the commit that stopped referencing `ids`. */
  condemn(ids: readonly string[]): void {
    if (ids.length === 0) return;
    this.queue.push(...ids);
    this.schedule();
  }

  /** Resolves when everything condemned so far is unlinked or parked for its readers. */
  async flush(): Promise<void> {
    while (this.draining !== null) await this.draining;
  }

  /** Blobs a reader still holds after being condemned (for tests and metrics). */
  get parked(): number {
    return this.awaitingReaders.size;
  }

  private schedule(): void {
    this.draining ??= this.drain().finally(() => {
      this.draining = null;
      if (this.queue.length > 0) this.schedule();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        await this.durability.barrier();
      } catch {
        // Cannot prove the commits durable: keep the files; the next open collects them.
        continue;
      }
      const removals: Promise<void>[] = [];
      for (const id of batch) {
        if (this.pins.has(id)) this.awaitingReaders.add(id);
        else removals.push(this.blobs.remove(id));
      }
      await Promise.all(removals);
    }
  }
}
