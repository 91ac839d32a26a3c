/**
 * Recent (src/backends/s3/recent.ts), the bounded map of what casket has
 * recently seen of the upstream (ETag index hints, last-seen versions): it
 * never holds more than its bound, and an entry in use outlives the ones
 * nobody asked for, so a listing's or a read's hint is not lost to others'.
 */
import { describe, expect, it } from 'vitest';
import { Recent } from '../../../src/backends/s3/recent.js';

describe('Recent', () => {
  it('never holds more than its bound', () => {
    const r = new Recent<number>(100);
    for (let i = 0; i < 1000; i++) {
      r.set(`k${i}`, i);
      expect(r.size).toBeLessThanOrEqual(100);
    }
    expect(r.get('k999')).toBe(999);
    expect(r.get('k0')).toBeUndefined();
  });

  it('keeps an entry that is read while the entries around it are written and forgotten', () => {
    const r = new Recent<string>(10);
    r.set('hot', 'kept');
    for (let i = 0; i < 100; i++) {
      r.set(`cold${i}`, 'x');
      expect(r.get('hot')).toBe('kept');
    }
    expect(r.get('cold0')).toBeUndefined();
  });

  it('replaces a value, and forgets what is deleted', () => {
    const r = new Recent<number>(10);
    r.set('a', 1);
    for (let i = 0; i < 4; i++) r.set(`b${i}`, i);
    r.set('a', 2);
    expect(r.get('a')).toBe(2);
    r.delete('a');
    expect(r.get('a')).toBeUndefined();
    expect(r.size).toBe(4);
  });
});
