/**
 * A per-key async mutex: writes to one (bucket, key) run one at a time inside
 * this process. The `s3` backend uses it where the upstream does not enforce
 * a condition itself (capabilities.ts): then "check the current ETag, then
 * write" is atomic only because no other write of this process to the same
 * key can run in between — which is why such writes are refused when several
 * casket replicas share the upstream. Locks are FIFO and the map holds only
 * keys with a holder or waiters.
 */
export class KeyLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys currently locked or awaited (tests). */
  get size(): number {
    return this.tails.size;
  }
}
