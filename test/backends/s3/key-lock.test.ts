/**
 * The s3 backend's per-key readers–writer lock (src/backends/s3/key-lock.ts):
 * shared holders run side by side (two streamed uploads of one key never wait
 * on each other's body); an exclusive holder (casket's own check-then-write)
 * runs alone; a shared writer never waits behind a waiting exclusive one.
 */
import { describe, expect, it } from 'vitest';
import { KeyLock } from '../../../src/backends/s3/key-lock.js';

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

describe('KeyLock', () => {
  it('shared holders of one key run at once', async () => {
    const lock = new KeyLock();
    const g = gate();
    const order: string[] = [];
    const a = lock.shared('k', async () => {
      order.push('a in');
      await g.opened;
      order.push('a out');
    });
    // b is granted while a still holds the key: it does not wait for a.
    await lock.shared('k', async () => {
      order.push('b');
    });
    g.open();
    await a;
    expect(order).toEqual(['a in', 'b', 'a out']);
    expect(lock.size).toBe(0);
  });

  it('an exclusive waiter waits for every shared holder; a later shared writer passes it (it may be the body the first one waits for), but none runs beside an exclusive holder', async () => {
    const lock = new KeyLock();
    const first = gate();
    const order: string[] = [];
    const a = lock.shared('k', async () => {
      await first.opened;
      order.push('shared a');
    });
    const x = lock.exclusive('k', async () => {
      order.push('exclusive in');
      await new Promise((r) => setImmediate(r));
      order.push('exclusive out');
    });
    // b is granted at once although x waits: a client waiting for b's answer before it finishes a's body is not deadlocked.
    await lock.shared('k', async () => {
      order.push('shared b');
    });
    expect(order).toEqual(['shared b']);
    first.open();
    await Promise.all([a, x]);
    // c arrives while x holds the key: it waits until x is out.
    const c = lock.shared('k', async () => {
      order.push('shared c');
    });
    await c;
    expect(order).toEqual(['shared b', 'shared a', 'exclusive in', 'exclusive out', 'shared c']);
    const held = gate();
    const y = lock.exclusive('k', () => held.opened);
    const d = lock.shared('k', async () => {
      order.push('shared d');
    });
    await new Promise((r) => setImmediate(r));
    expect(order).not.toContain('shared d');
    held.open();
    await Promise.all([y, d]);
    expect(order.at(-1)).toBe('shared d');
    expect(lock.size).toBe(0);
  });

  it('exclusive holders of one key run one at a time; other keys are not held up; a failing holder releases', async () => {
    const lock = new KeyLock();
    let inside = 0;
    let most = 0;
    const work = async () => {
      inside++;
      most = Math.max(most, inside);
      await new Promise((r) => setImmediate(r));
      inside--;
    };
    const failing = lock.exclusive('k', async () => {
      throw new Error('boom');
    });
    await expect(failing).rejects.toThrow('boom');
    await Promise.all([...Array.from({ length: 8 }, () => lock.exclusive('k', work)), lock.shared('other', async () => expect(lock.size).toBe(2))]);
    expect(most).toBe(1);
    expect(lock.size).toBe(0);
  });
});
