/**
 * A per-key readers–writer lock for the `s3` backend's writes in this process.
 *
 * - `exclusive`: a write whose condition the upstream does not enforce
 *   (capabilities.ts) is made atomic by casket itself — check the current
 *   ETag, then write — which holds only if no other write of this process to
 *   the key runs in between. Such writes are refused when several casket
 *   replicas share the upstream (commit.ts).
 * - `shared`: writes the upstream orders by itself (unconditional, or under a
 *   condition it enforces) run side by side; they only wait for an exclusive
 *   holder, so none can slip between its check and its commit.
 *
 * Why shared, not one mutex for every write: a shared holder of a streamed
 * PutObject holds the lock while the client's body is in flight. Two
 * overlapping PutObjects of one key from one client (the second starts before
 * the first finished sending its body) would otherwise wait on each other —
 * the second for the lock, the first for its body — until the upstream timed
 * the first out. An exclusive holder never waits on a client: its body is
 * received before it asks for the lock (objects.ts).
 *
 * FIFO: a waiter is granted only when nobody ahead of it waits, so a stream
 * of shared writers cannot starve an exclusive one. The map holds only keys
 * with a holder or a waiter.
 */
type Mode = 'shared' | 'exclusive';

interface KeyState {
  holders: number;
  exclusive: boolean;
  queue: Array<{ mode: Mode; grant: () => void }>;
}

export class KeyLock {
  private readonly keys = new Map<string, KeyState>();

  shared<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.run(key, 'shared', fn);
  }

  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.run(key, 'exclusive', fn);
  }

  async run<T>(key: string, mode: Mode, fn: () => Promise<T>): Promise<T> {
    let state = this.keys.get(key);
    if (!state) this.keys.set(key, (state = { holders: 0, exclusive: false, queue: [] }));
    const s = state;
    await new Promise<void>((grant) => {
      s.queue.push({ mode, grant });
      this.pump(s);
    });
    try {
      return await fn();
    } finally {
      s.holders--;
      s.exclusive = false;
      this.pump(s);
      if (s.holders === 0 && s.queue.length === 0) this.keys.delete(key);
    }
  }

  private pump(s: KeyState): void {
    while (s.queue.length > 0) {
      const head = s.queue[0]!;
      if (s.exclusive || (head.mode === 'exclusive' && s.holders > 0)) return;
      s.queue.shift();
      s.holders++;
      s.exclusive = head.mode === 'exclusive';
      head.grant();
    }
  }

  /** Keys currently held or awaited (tests). */
  get size(): number {
    return this.keys.size;
  }
}
