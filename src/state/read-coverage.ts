/**
 * Whether an agent has read a version whole (docs/design.md §4): one GET, or several
 * Range GETs of the same version that together cover it — boto3, awscli and
 * rclone download large objects as ranged GETs. A read of another version
 * starts a new stamp. Pure, shared by every state store.
 */
import type { ReadEvent, ReadStamp } from './types.js';

export function mergeRead(previous: ReadStamp | undefined, read: ReadEvent, now: number): ReadStamp {
  const base = previous && previous.etag === read.etag ? previous.covered : [];
  const covered = mergeIntervals([...base, [read.start, read.end]]);
  const first = covered[0];
  // The intervals are merged and sorted: the first one alone either covers the version or nothing does.
  const full = read.size === 0 || (first !== undefined && first[0] <= 0 && first[1] >= read.size);
  return { etag: read.etag, size: read.size, full, covered: full ? [[0, read.size]] : covered, at: now };
}

/** Whether this one read delivered the whole version: its stamp is then full whatever came before (mergeRead). */
export function readsWhole(read: ReadEvent): boolean {
  return read.size === 0 || (read.start <= 0 && read.end >= read.size);
}

export function fullStamp(etag: string, size: number, now: number): ReadStamp {
  return { etag, size, full: true, covered: [[0, size]], at: now };
}

function mergeIntervals(intervals: Array<[number, number]>): Array<[number, number]> {
  const sorted = intervals.filter(([s, e]) => e > s).sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  for (const [s, e] of sorted) {
    const last = out[out.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}
