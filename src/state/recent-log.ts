/**
 * The newest entries of a write log that one process owns (the SQLite state
 * store's), kept in memory as listWriteLog answers them, so the question
 * every MCP answer asks — the newest writes since an instant (the "changed
 * since you read" look, src/changes/since-read.ts) — is answered without
 * reading the table. While agents write, each look re-reads up to 100 rows
 * of its margin; from the table that was most of an edit_file's reminder
 * cost (docs/performance.md, "MCP tools").
 *
 * Exact, or no answer: every entry with an id above `afterId` is here, and
 * `olderMaxAt` is at least the newest time of any entry at or below it
 * (entries are appended in about time order, not exactly). So the newest
 * `limit` entries at or after an instant are all here when `limit` of them
 * are, or when nothing older is that new; otherwise the table answers. A
 * prune only deletes, so after one the bound is still a bound.
 */
import type { WriteLogEntry } from './types.js';

/** Entries kept: a look reads at most 100 (since-read.ts MAX_WRITES), and several agents' looks start at different instants. */
const KEPT = 512;

export class RecentLog {
  /** Ids ascending: the order of the log. */
  private readonly entries: Array<{ id: number; entry: WriteLogEntry }> = [];

  /** `afterId`: the log's newest id now; `olderMaxAt`: the newest time of any entry in it (-Infinity: none). */
  constructor(private afterId: number, private olderMaxAt: number) {}

  /** An entry just committed with this id (ids only grow). */
  add(id: number, entry: WriteLogEntry): void {
    this.entries.push({ id, entry: Object.freeze(entry) });
    if (this.entries.length > KEPT) {
      const old = this.entries.shift()!;
      this.afterId = old.id;
      this.olderMaxAt = Math.max(this.olderMaxAt, old.entry.at.getTime());
    }
  }

  /** What a prune deleted: entries made before `cutoff`, and those with an id at or below `deletedUpTo`. */
  pruned(cutoff: number, deletedUpTo: number): void {
    let kept = 0;
    for (const e of this.entries) if (e.entry.at.getTime() >= cutoff && e.id > deletedUpTo) this.entries[kept++] = e;
    this.entries.length = kept;
  }

  /** The newest `limit` entries made at or after `floor` (epoch ms), newest first — or undefined when the table must answer. */
  newestSince(floor: number, limit: number): WriteLogEntry[] | undefined {
    const out: WriteLogEntry[] = [];
    for (let i = this.entries.length - 1; i >= 0 && out.length < limit; i--) {
      const { entry } = this.entries[i]!;
      if (entry.at.getTime() >= floor) out.push(entry);
    }
    return out.length >= limit || this.olderMaxAt < floor ? out : undefined;
  }
}
