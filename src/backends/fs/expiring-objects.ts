/**
 * Objects a bucket's Expiration rules say are due, on the embedded store
 * (vocabulary/lifecycle.ts): each current object (a delete marker is no
 * object) under an enabled rule's prefix, within its size bounds, whose
 * expiry time has come. Only judged here, never deleted: the delete goes
 * through the guarded write path, conditional on the ETag judged
 * (s3/lifecycle-expiration.ts), so a PUT that lands in between is kept.
 */
import type { Database, Statement } from '../../sqlite.js';
import { expiringRule, type LifecycleRule } from '../../vocabulary/lifecycle.js';
import type { ExpiredObject } from '../types.js';
import { prefixSuccessor } from './key-range.js';

interface Row {
  key: string;
  etag: string;
  size: number;
  last_modified: number;
}

/** One sweep judges at most this many objects; the next sweep goes on (requests never wait on a sweep). */
const MAX_PER_SWEEP = 10_000;

export class ExpiringObjects {
  private readonly selectRules: Statement<[], { name: string; lifecycle: string }>;
  private readonly selectFrom: Statement<[string, string], Row>;
  private readonly selectRange: Statement<[string, string, string], Row>;

  constructor(db: Database) {
    this.selectRules = db.prepare('SELECT name, lifecycle FROM buckets WHERE lifecycle IS NOT NULL');
    this.selectFrom = db.prepare('SELECT key, etag, size, last_modified FROM objects WHERE bucket = ? AND key >= ? ORDER BY key');
    this.selectRange = db.prepare('SELECT key, etag, size, last_modified FROM objects WHERE bucket = ? AND key >= ? AND key < ? ORDER BY key');
  }

  /** The objects due by `now`, each with the ETag it was judged at and the rule that expires it. */
  due(now: number): ExpiredObject[] {
    const due: ExpiredObject[] = [];
    for (const { name: bucket, lifecycle } of this.selectRules.all()) {
      const rules = (JSON.parse(lifecycle) as LifecycleRule[]).filter((r) => r.enabled && r.expiration !== undefined);
      const seen = new Set<string>();
      for (const prefix of new Set(rules.map((r) => r.prefix))) {
        const end = prefixSuccessor(prefix);
        const rows = end === undefined ? this.selectFrom.iterate(bucket, prefix) : this.selectRange.iterate(bucket, prefix, end);
        for (const row of rows) {
          if (seen.has(row.key)) continue;
          seen.add(row.key);
          const e = expiringRule(rules, { key: row.key, size: row.size, lastModifiedMs: row.last_modified });
          if (e === undefined || now < e.at) continue;
          due.push({ bucket, key: row.key, etag: row.etag, ruleId: e.rule.id ?? '' });
          if (due.length >= MAX_PER_SWEEP) return due;
        }
      }
    }
    return due;
  }
}
