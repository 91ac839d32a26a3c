/**
 * Per-key gates that order changesets against everything else one casket
 * does with their keys (issue 39, isolation):
 *
 *   - a changeset holds every one of its keys exclusively, from the check of
 *     its conditions to its last applied entry;
 *   - a single write (s3/write.ts guardedWrite) holds its key shared for its
 *     whole check-and-commit, so it lands wholly before a changeset's check or
 *     wholly after its last entry — never between the two;
 *   - a read (GetObject, HeadObject) waits while its key is held exclusively,
 *     so it sees every key of a changeset at the old version or the new one.
 *
 * Exclusive holders are served in order of arrival and block new shared
 * holders while they wait (no writer starvation). Keys are taken in sorted
 * order so two changesets over overlapping keys cannot deadlock. Every wait is
 * bounded: past it the caller is answered 503 SlowDown and holds nothing.
 *
 * Cost on the happy path of a single request: one Map lookup (and, for a
 * write, one Map insert/delete) in this process. One casket only (memory and
 * SQLite state); caskets sharing Redis use shared-gate.ts, the same `Gate`
 * kept in Redis, chosen by the state store (server.ts).
 */
import { S3Error } from '../vocabulary/errors.js';

/** A changeset's hold on all its keys. */
export interface ExclusiveHold {
  release(): void;
  /**
   * Throws LeaseLost when the hold may have lapsed (a shared gate's lease
   * not renewed in time): nothing more may be written under it. Called
   * before each entry's write (commit.ts applyIntent).
   */
  fence(): void;
}

/** Orders changesets against single writes and reads: one process's (KeyGate) or every casket's on one Redis (shared-gate.ts). */
export interface Gate {
  /** Holds bucket/key shared (a single write): resolves to its release. */
  shared(bucket: string, key: string): Promise<() => void>;
  /** Waits, without holding anything, until no changeset holds bucket/key (a read). */
  settled(bucket: string, key: string): Promise<void>;
  /** Holds every key exclusively for the changeset `owner`, taken in sorted order. */
  exclusive(keys: ReadonlyArray<{ bucket: string; key: string }>, owner: string): Promise<ExclusiveHold>;
  close?(): Promise<void>;
}

/** A changeset's hold lapsed before all its entries were written: it stops writing, and is finished once its keys are held again. */
export class LeaseLost extends Error {
  constructor(readonly changeset: string) {
    super(`the changeset ${changeset} no longer holds its keys (its lease lapsed)`);
    this.name = 'LeaseLost';
  }
}

interface KeyState {
  shared: number;
  exclusive: boolean;
  /** Exclusive requests waiting, first come first served. */
  queue: Array<() => void>;
  /** Shared requests waiting for the exclusive holder and the queue ahead of them. */
  readers: Array<() => void>;
}

/** JSON, so no bucket runs into its key. */
function id(bucket: string, key: string): string {
  return JSON.stringify([bucket, key]);
}

export const DEFAULT_WAIT_MS = 10_000;

export class KeyGate implements Gate {
  private readonly keys = new Map<string, KeyState>();

  constructor(private readonly waitMs = DEFAULT_WAIT_MS) {}

  private state(k: string): KeyState {
    let s = this.keys.get(k);
    if (!s) this.keys.set(k, (s = { shared: 0, exclusive: false, queue: [], readers: [] }));
    return s;
  }

  private tidy(k: string, s: KeyState): void {
    if (s.shared === 0 && !s.exclusive && s.queue.length === 0 && s.readers.length === 0) this.keys.delete(k);
  }

  /**
   * Hands the key on: to the next exclusive waiter when it is free, else to
   * every shared waiter. The hold is taken here, at hand-off, so nothing
   * arriving before the waiter resumes can slip in between.
   */
  private wake(s: KeyState): void {
    if (s.exclusive) return;
    if (s.queue.length > 0) {
      if (s.shared === 0) {
        s.exclusive = true;
        s.queue.shift()!();
      }
      return;
    }
    for (const r of s.readers.splice(0)) {
      s.shared++;
      r();
    }
  }

  /** Waits for `ready` at most waitMs; on timeout runs `giveUp` (which removes the waiter) and throws SlowDown. */
  private wait(enqueue: (go: () => void) => void, giveUp: (go: () => void) => void, what: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const go = () => {
        clearTimeout(timer);
        resolve();
      };
      enqueue(go);
      timer = setTimeout(() => {
        giveUp(go);
        reject(new S3Error('SlowDown', `${what} waited ${this.waitMs} ms for a changeset on the same key to finish: try again.`));
      }, this.waitMs);
    });
  }

  /** Holds bucket/key shared (a single write): resolves to its release. */
  async shared(bucket: string, key: string): Promise<() => void> {
    const k = id(bucket, key);
    const s = this.state(k);
    if (s.exclusive || s.queue.length > 0) {
      await this.wait(
        (go) => s.readers.push(go),
        (go) => {
          s.readers.splice(s.readers.indexOf(go) >>> 0, 1);
          this.tidy(k, s);
        },
        'The write',
      );
    } else s.shared++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      s.shared--;
      this.wake(s);
      this.tidy(k, s);
    };
  }

  /** Waits, without holding anything, until no changeset holds bucket/key (a read). */
  async settled(bucket: string, key: string): Promise<void> {
    const s = this.keys.get(id(bucket, key));
    if (!s || !s.exclusive) return;
    (await this.shared(bucket, key))();
  }

  /** Holds every key exclusively, taken in sorted order. In one process a hold cannot lapse: fence() never throws. */
  async exclusive(keys: ReadonlyArray<{ bucket: string; key: string }>): Promise<ExclusiveHold> {
    const ids = [...new Set(keys.map((k) => id(k.bucket, k.key)))].sort();
    const held: Array<() => void> = [];
    const releaseAll = () => {
      for (const r of held.splice(0).reverse()) r();
    };
    try {
      for (const k of ids) held.push(await this.one(k));
    } catch (e) {
      releaseAll();
      throw e;
    }
    return { release: releaseAll, fence: () => {} };
  }

  private async one(k: string): Promise<() => void> {
    const s = this.state(k);
    if (s.exclusive || s.shared > 0 || s.queue.length > 0) {
      await this.wait(
        (go) => s.queue.push(go),
        (go) => {
          s.queue.splice(s.queue.indexOf(go) >>> 0, 1);
          // Readers queued behind this waiter may go now.
          this.wake(s);
          this.tidy(k, s);
        },
        'The changeset',
      );
    } else s.exclusive = true;
    return () => {
      s.exclusive = false;
      this.wake(s);
      this.tidy(k, s);
    };
  }
}
