/**
 * A bounded map that forgets its least recently used entries (Map keeps
 * insertion order: a hit is re-inserted at the end, the oldest is first).
 * Used for what this process has recently seen of the upstream: hints that
 * save a round trip, never the arbiter of anything — the upstream's own
 * conditional requests and the state store are.
 */
export class Recent<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly max: number) {}

  get(id: string): V | undefined {
    const value = this.entries.get(id);
    if (value !== undefined) {
      this.entries.delete(id);
      this.entries.set(id, value);
    }
    return value;
  }

  set(id: string, value: V): void {
    this.entries.delete(id);
    this.entries.set(id, value);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(id: string): void {
    this.entries.delete(id);
  }

  get size(): number {
    return this.entries.size;
  }
}
