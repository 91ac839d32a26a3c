/**
 * In-memory state store: for tests and single-process setups that do not need
 * stamps to survive a restart. Maps keep insertion order, so re-inserting on
 * every touch makes the first entry the least recently used one to evict.
 */
import { compareKeys } from '../vocabulary/names.js';
import { fullStamp, mergeRead } from './read-coverage.js';
import { DEFAULT_STATE_LIMITS, type ReadEvent, type ReadStamp, type PartDigest, SESSION_GRACE_MS, type OAuthGrant, type SessionRecord, type StampEntry, type StateLimits, type StateStore, type WriteLogEntry, type WriteLogQuery, inWindow, LOG_ORDER_SLACK_MS } from './types.js';

const SEP = '\u0000';

export class MemoryStateStore implements StateStore {
  private readonly stamps = new Map<string, ReadStamp>();
  private readonly log: WriteLogEntry[] = [];
  /** Entries ever appended: log[i] is entry number appended - log.length + i, its cursor. */
  private appended = 0;
  /** Newest entry per bucket/key (lastWrite), trimmed with the log. */
  private readonly last = new Map<string, WriteLogEntry>();
  private readonly index = new Map<string, string>();
  /** uploadId -> `<partNumber> <md5>` -> digest, in recording order. */
  private readonly parts = new Map<string, Map<string, PartDigest>>();
  private readonly sessions = new Map<string, SessionRecord>();
  /** Console session id -> epoch ms it is revoked until: not capped by maxEntries, so a revocation is never forgotten early. */
  private readonly consoleRevocations = new Map<string, number>();
  private readonly oauthGrants = new Map<string, OAuthGrant>();
  private readonly reminderCursors = new Map<string, { cursor: string; at: number }>();

  constructor(private readonly limits: StateLimits = DEFAULT_STATE_LIMITS) {}

  private touch(id: string, stamp: ReadStamp): void {
    this.stamps.delete(id);
    this.stamps.set(id, stamp);
    while (this.stamps.size > this.limits.maxEntries) {
      const oldest = this.stamps.keys().next().value;
      if (oldest === undefined) break;
      this.stamps.delete(oldest);
    }
  }

  private live(stamp: ReadStamp | undefined): ReadStamp | undefined {
    return stamp && Date.now() - stamp.at <= this.limits.ttlMs ? stamp : undefined;
  }

  async recordRead(agent: string, bucket: string, key: string, read: ReadEvent): Promise<ReadStamp> {
    const id = [agent, bucket, key].join(SEP);
    const stamp = mergeRead(this.live(this.stamps.get(id)), read, Date.now());
    this.touch(id, stamp);
    return stamp;
  }

  async recordWrite(agent: string, bucket: string, key: string, etag: string, size: number): Promise<void> {
    this.touch([agent, bucket, key].join(SEP), fullStamp(etag, size, Date.now()));
  }

  async getStamp(agent: string, bucket: string, key: string): Promise<ReadStamp | undefined> {
    return this.live(this.stamps.get([agent, bucket, key].join(SEP)));
  }

  async listStamps(agent: string): Promise<StampEntry[]> {
    const out: StampEntry[] = [];
    for (const [id, stamp] of this.stamps) {
      // A key may hold U+0000 itself: everything after the bucket's separator is the key.
      const [a, bucket, ...key] = id.split(SEP) as [string, string, ...string[]];
      if (a === agent && this.live(stamp)) out.push({ bucket, key: key.join(SEP), stamp });
    }
    // In the order S3 and the SQLite store list keys: UTF-8 binary, not JavaScript's UTF-16 `<`.
    return out.sort((x, y) => compareKeys(x.bucket, y.bucket) || compareKeys(x.key, y.key));
  }

  async forgetStamp(agent: string, bucket: string, key: string): Promise<void> {
    this.stamps.delete([agent, bucket, key].join(SEP));
  }

  async appendWriteLog(entry: WriteLogEntry): Promise<void> {
    this.log.push(entry);
    this.appended++;
    const id = [entry.bucket, entry.key].join(SEP);
    this.last.delete(id);
    this.last.set(id, entry);
    // Within the cap the count is 0 or less, and splice removes nothing.
    this.log.splice(0, this.log.length - this.limits.maxEntries);
    while (this.last.size > this.limits.maxEntries) this.last.delete(this.last.keys().next().value!);
  }

  /** Every append goes through this object (it is the process's own). */
  async writeLogVersion(): Promise<number> {
    return this.appended;
  }

  async lastWrite(bucket: string, key: string): Promise<WriteLogEntry | undefined> {
    const e = this.last.get([bucket, key].join(SEP));
    return e && Date.now() - e.at.getTime() <= this.limits.ttlMs ? e : undefined;
  }

  async listWriteLog(q: WriteLogQuery): Promise<WriteLogEntry[]> {
    const cutoff = Date.now() - this.limits.ttlMs;
    const out: WriteLogEntry[] = [];
    const first = this.appended - this.log.length;
    const start = q.before === undefined ? this.log.length - 1 : Math.min(Number(q.before) - first - 1, this.log.length - 1);
    for (let i = start; i >= 0 && out.length < q.limit; i--) {
      const e = this.log[i]!;
      if (e.at.getTime() < cutoff) break;
      // Stryker disable next-line ConditionalExpression: a speed bound only: scanning on (`false`) lists the same entries; never stopping here is what types.ts's LOG_ORDER_SLACK_MS allows (`true` is caught by the window tests).
      if (q.since !== undefined && e.at.getTime() < q.since.getTime() - LOG_ORDER_SLACK_MS) break;
      if ((q.bucket === undefined || e.bucket === q.bucket) && (q.key === undefined || e.key === q.key) && (q.prefix === undefined || e.key.startsWith(q.prefix)) && (q.agent === undefined || e.agent === q.agent) && inWindow(e, q)) out.push({ ...e, cursor: String(first + i) });
    }
    return out;
  }

  async getIndexedETag(bucket: string, key: string, upstreamETag: string): Promise<string | undefined> {
    return this.index.get([bucket, key, upstreamETag].join(SEP));
  }

  async getIndexedETags(bucket: string, entries: ReadonlyArray<readonly [key: string, upstreamETag: string]>): Promise<Array<string | undefined>> {
    return entries.map(([key, upstreamETag]) => this.index.get([bucket, key, upstreamETag].join(SEP)));
  }

  async putIndexedETag(bucket: string, key: string, upstreamETag: string, etag: string): Promise<void> {
    const id = [bucket, key, upstreamETag].join(SEP);
    this.index.delete(id);
    this.index.set(id, etag);
    while (this.index.size > this.limits.maxEntries) {
      const oldest = this.index.keys().next().value;
      if (oldest === undefined) break;
      this.index.delete(oldest);
    }
  }

  async putPartDigest(uploadId: string, part: PartDigest): Promise<void> {
    let upload = this.parts.get(uploadId);
    if (!upload) this.parts.set(uploadId, (upload = new Map()));
    // Deleted first: a Map keeps insertion order, so a re-recorded digest becomes the latest.
    const id = `${part.partNumber} ${part.md5}`;
    upload.delete(id);
    upload.set(id, part);
  }

  async getPartDigests(uploadId: string): Promise<PartDigest[]> {
    // A stable sort: recording order within a part number.
    return [...(this.parts.get(uploadId)?.values() ?? [])].sort((a, b) => a.partNumber - b.partNumber);
  }

  async deletePartDigests(uploadId: string): Promise<void> {
    this.parts.delete(uploadId);
  }

  async putSession(session: SessionRecord): Promise<void> {
    const now = Date.now();
    for (const [id, s] of this.sessions) if (s.expiresAt + SESSION_GRACE_MS < now) this.sessions.delete(id);
    this.sessions.set(session.accessKeyId, { ...session });
    while (this.sessions.size > this.limits.maxEntries) this.sessions.delete(this.sessions.keys().next().value!);
  }

  async getSession(accessKeyId: string): Promise<SessionRecord | undefined> {
    const s = this.sessions.get(accessKeyId);
    return s && s.expiresAt + SESSION_GRACE_MS >= Date.now() ? { ...s } : undefined;
  }

  async revokeSession(accessKeyId: string): Promise<boolean> {
    const s = await this.getSession(accessKeyId);
    if (!s) return false;
    this.sessions.set(accessKeyId, { ...s, revoked: true });
    return true;
  }

  async listSessions(agent: string): Promise<SessionRecord[]> {
    const now = Date.now();
    return [...this.sessions.values()].filter((s) => s.agent === agent && s.expiresAt + SESSION_GRACE_MS >= now).map((s) => ({ ...s })).sort((a, b) => a.expiresAt - b.expiresAt);
  }

  async revokeConsoleSession(id: string, untilMs: number): Promise<void> {
    const now = Date.now();
    for (const [other, until] of this.consoleRevocations) if (until < now) this.consoleRevocations.delete(other);
    if (untilMs > now) this.consoleRevocations.set(id, untilMs);
  }

  async consoleSessionRevoked(id: string): Promise<boolean> {
    return (this.consoleRevocations.get(id) ?? 0) >= Date.now();
  }

  async getReminderCursor(agent: string): Promise<string | undefined> {
    const kept = this.reminderCursors.get(agent);
    return kept && Date.now() - kept.at <= this.limits.ttlMs ? kept.cursor : undefined;
  }

  async putReminderCursor(agent: string, cursor: string): Promise<void> {
    this.reminderCursors.delete(agent);
    this.reminderCursors.set(agent, { cursor, at: Date.now() });
    while (this.reminderCursors.size > this.limits.maxEntries) this.reminderCursors.delete(this.reminderCursors.keys().next().value!);
  }

  async putOAuthGrant(grant: OAuthGrant): Promise<void> {
    const now = Date.now();
    for (const [id, g] of this.oauthGrants) if (g.expiresAt < now) this.oauthGrants.delete(id);
    this.oauthGrants.set(grant.id, { ...grant });
  }

  async getOAuthGrant(id: string): Promise<OAuthGrant | undefined> {
    const g = this.oauthGrants.get(id);
    return g && g.expiresAt >= Date.now() ? { ...g } : undefined;
  }

  async listOAuthGrants(): Promise<OAuthGrant[]> {
    const now = Date.now();
    return [...this.oauthGrants.values()].filter((g) => g.expiresAt >= now).map((g) => ({ ...g }));
  }

  async deleteOAuthGrant(id: string): Promise<boolean> {
    return this.oauthGrants.delete(id);
  }

  async swapOAuthSecret(id: string, expected: string, next: string, usedAt: number, expiresAt: number): Promise<boolean> {
    const g = this.oauthGrants.get(id);
    if (!g || g.expiresAt < Date.now() || g.secretHash !== expected) return false;
    this.oauthGrants.set(id, { ...g, secretHash: next, pendingCode: false, lastUsedAt: usedAt, expiresAt });
    return true;
  }

  async close(): Promise<void> {}
}
