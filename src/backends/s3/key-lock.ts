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
 * Shared waiters pass a waiting exclusive one: a shared holder may be a
 * streamed body still in flight, and the client sending it may be waiting
 * for its own next request to this key (two overlapping PutObjects, with a
 * conditional DeleteObject in between, as in
 * test/integration/overlapping-writes.test.ts) — queued behind the exclusive
 * writer, which waits for the first body, that request would never be
 * answered. The price: an exclusive writer waits until no shared write of
 * the key is in flight, so a key written without pause delays it (it is
 * never refused for that, and never let in early). Exclusive waiters are
 * served in arrival order. The map holds only keys with a holder or a waiter.
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
    if (s.exclusive) return;
    // Every shared waiter goes in; the first exclusive one, once nobody holds the key.
    for (let i = 0; i < s.queue.length; ) {
      const waiter = s.queue[i]!;
      if (waiter.mode === 'shared') {
        s.queue.splice(i, 1);
        s.holders++;
        waiter.grant();
      } else i++;
    }
    const head = s.queue[0];
    if (head && s.holders === 0) {
      s.queue.shift();
      s.holders = 1;
      s.exclusive = true;
      head.grant();
    }
  }

  /** Keys currently held or awaited (tests). */
  get size(): number {
    return this.keys.size;
  }
}
