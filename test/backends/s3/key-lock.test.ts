/**
 * The s3 backend's per-key readers–writer lock (src/backends/s3/key-lock.ts):
 * shared holders run side by side (two streamed uploads of one key never wait
 * on each other's body); an exclusive holder (casket's own check-then-write)
 * runs alone, and waiting shared holders cannot starve it.
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

  it('an exclusive holder waits for shared holders, and later shared ones wait for it (FIFO)', async () => {
    const lock = new KeyLock();
    const g = gate();
    const order: string[] = [];
    const a = lock.shared('k', async () => {
      await g.opened;
      order.push('shared a');
    });
    const x = lock.exclusive('k', async () => {
      order.push('exclusive');
    });
    const b = lock.shared('k', async () => {
      order.push('shared b');
    });
    g.open();
    await Promise.all([a, x, b]);
    expect(order).toEqual(['shared a', 'exclusive', 'shared b']);
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
