/**
 * casket's own state, apart from object data: read stamps (what each agent
 * last read, and whether whole — docs/design.md §4), the write log (who replaced
 * which version with which), and the ETag index of the s3 backend (the
 * SHA-256 ETag kept against the upstream's own ETag — docs/design.md §2).
 *
 * Implementations: memory.ts (tests, single process), sqlite.ts (default,
 * persistent in the data dir), redis.ts (several replicas). Every one is
 * bounded by a TTL and an entry cap.
 */

export interface ReadStamp {
  /** casket ETag of the version read (unquoted). */
  etag: string;
  size: number;
  /** True when the bytes delivered of this version cover all of it. */
  full: boolean;
  /** Byte intervals delivered so far, [start, end) sorted and merged. */
  covered: Array<[number, number]>;
  /** Epoch ms of the last read or write that touched the stamp. */
  at: number;
}

export interface StampEntry {
  bucket: string;
  key: string;
  stamp: ReadStamp;
}

export interface ReadEvent {
  etag: string;
  size: number;
  /** Inclusive start, exclusive end of the bytes delivered. */
  start: number;
  end: number;
}

export interface WriteLogEntry {
  at: Date;
  bucket: string;
  key: string;
  operation: string;
  /** Agent that made the write; absent for people (untagged requests). */
  agent?: string;
  accessKey?: string;
  /** ETag replaced (absent: the key did not exist). */
  previousETag?: string;
  /** ETag written (absent: a delete). */
  newETag?: string;
  /**
   * The version id the write made (x-amz-version-id) in a versioned bucket:
   * the new version, or the delete marker a delete made. A rollback names
   * versions by it (docs/design.md §10).
   */
  versionId?: string;
  /**
   * The request's `amz-sdk-invocation-id`: AWS SDKs keep it across their
   * automatic retries, so with the access key it names the very write a retry
   * repeats (docs/design.md §3, exact retries).
   */
  invocationId?: string;
  /** The changeset the write was an entry of (src/changesets/): its entries share it. */
  changeset?: string;
  /**
   * Where the entry sits in the log, set by listWriteLog: an opaque cursor
   * for the next page (WriteLogQuery.before). Never stored.
   */
  cursor?: string;
}

export interface WriteLogQuery {
  bucket?: string;
  key?: string;
  /** Keys that start with this. */
  prefix?: string;
  agent?: string;
  /**
   * Only entries older than the one whose `cursor` this is: keyset paging, so
   * page n of a long log costs what page 1 does (the console pages 100,000
   * entries this way, never loading them all).
   */
  before?: string;
  /** Entries made at or after this instant (rollback's window, src/rollback/). */
  since?: Date;
  /** Entries made at or before this instant. */
  until?: Date;
  limit: number;
}

/**
 * Entries are appended in about the order of their times, not exactly: the
 * time is taken just before the append (guard.ts recordWrite), appends of
 * concurrent writes interleave, and caskets sharing Redis read their own
 * clocks. A scan newest first may stop once it is this far before `since`.
 */
export const LOG_ORDER_SLACK_MS = 60_000;

/** Whether an entry falls in a query's time window (memory and redis filter with it; sqlite in SQL). */
export function inWindow(e: { at: Date | number }, q: Pick<WriteLogQuery, 'since' | 'until'>): boolean {
  const at = typeof e.at === 'number' ? e.at : e.at.getTime();
  return (q.since === undefined || at >= q.since.getTime()) && (q.until === undefined || at <= q.until.getTime());
}

export interface PartDigest {
  partNumber: number;
  /** Hex digests of the part's bytes. */
  sha256: string;
  md5: string;
  size: number;
  /** The part's additional checksum, `<algorithm> <base64>`, when it has one. */
  checksum?: string;
}

/**
 * A credential minted by casket's STS AssumeRole (docs/design.md §7), kept where
 * every replica sharing the store can verify it.
 */
export interface SessionRecord {
  /** "ASIA..." as AWS temporary keys. */
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  /** The agent the RoleArn named: requests with this credential are that agent's. */
  agent: string;
  sessionName: string;
  /** Epoch ms. */
  expiresAt: number;
  /** Access key that minted it. */
  issuedBy: string;
  /**
   * Parsed policies (auth/policy.ts Policy, plain JSON data) that must all
   * allow a request: the caller's and the session policy. Empty: full rights.
   */
  policies: unknown[];
  revoked?: boolean;
}

/**
 * How long a session record outlives its expiry, so that a late request
 * is told ExpiredToken rather than that the key never existed.
 */
export const SESSION_GRACE_MS = 3600 * 1000;

/**
 * An MCP client's authorization (src/oauth/grants.ts): one login and consent,
 * from its authorization code to its last refresh token. Only hashes of the
 * code and refresh token are kept, never the tokens themselves.
 */
export interface OAuthGrant {
  id: string;
  clientId: string;
  clientName: string;
  redirectUri: string;
  /** The credential whose policy the tokens carry, and the agent they act as. */
  accessKeyId: string;
  agent?: string;
  /** Which secret of that key consented (src/oauth/grants.ts keyFingerprint): a rotated key's grants end. */
  keyFingerprint?: string;
  /** RFC 8707 resource: the MCP endpoint's URL, the tokens' audience. */
  resource: string;
  /** PKCE S256 code_challenge (RFC 7636 §4.2). */
  codeChallenge: string;
  /** SHA-256 (base64url) of the one code or refresh token that may be redeemed next. */
  secretHash: string;
  /** Whether `secretHash` is the authorization code's (not yet redeemed). */
  pendingCode: boolean;
  /** Epoch ms. */
  createdAt: number;
  lastUsedAt: number;
  /** Epoch ms after which the grant is forgotten (a code's minute, then a refresh token's idle limit). */
  expiresAt: number;
}

export interface StateLimits {
  /** Stamps and log entries older than this are forgotten. */
  ttlMs: number;
  /** At most this many stamps (oldest forgotten first); the write log keeps as many entries. */
  maxEntries: number;
}

export const DEFAULT_STATE_LIMITS: StateLimits = { ttlMs: 7 * 24 * 3600 * 1000, maxEntries: 1_000_000 };

/** An ETag-index entry (StateStore.putIndexedETag's arguments). */
export interface IndexEntry {
  bucket: string;
  key: string;
  /** The upstream's ETag, or it with a `#parts` / `#checksum` suffix. */
  upstreamETag: string;
  value: string;
}

/** What StateStore.recordCommittedWrite records of one write. */
export interface CommittedWrite {
  /** An agent's write: its stamp becomes a full read of `made`, or is dropped when the write made nothing (a delete). */
  stamp?: { agent: string; made: { etag: string; size: number } | null };
  log: WriteLogEntry;
  index: IndexEntry[];
}

export interface StateStore {
  /** Merges one delivered byte range into the agent's stamp for this key, atomically. */
  recordRead(agent: string, bucket: string, key: string, read: ReadEvent): Promise<ReadStamp>;
  /** The agent's own write counts as a full read of what it wrote. */
  recordWrite(agent: string, bucket: string, key: string, etag: string, size: number): Promise<void>;
  getStamp(agent: string, bucket: string, key: string): Promise<ReadStamp | undefined>;
  /** getStamp for several keys in one query, in the order asked; absent: ask getStamp for each. */
  getStamps?(agent: string, keys: ReadonlyArray<{ bucket: string; key: string }>): Promise<Array<ReadStamp | undefined>>;
  listStamps(agent: string): Promise<StampEntry[]>;
  /** Drops the agent's stamp for a key it deleted. */
  forgetStamp(agent: string, bucket: string, key: string): Promise<void>;

  appendWriteLog(entry: WriteLogEntry): Promise<void>;
  listWriteLog(query: WriteLogQuery): Promise<WriteLogEntry[]>;
  /**
   * A number that changes whenever the write log may have changed: two calls
   * that answer the same number saw the same log (up to entries expiring).
   * Only a store no other process appends to can know it without asking
   * (sqlite, memory); a shared one (redis) has no such method, and its
   * callers ask the log itself every time.
   */
  writeLogVersion?(): Promise<number>;
  /**
   * For a store no other process writes stamps to (sqlite): a mark of its
   * stamps now, and whether any of `keys` of `agent` had its stamp set or
   * dropped since a mark it gave (true when it can no longer tell). A shared
   * store (redis) has neither.
   */
  stampMark?(): Promise<number>;
  stampsChangedSince?(mark: number, agent: string, keys: ReadonlyArray<{ bucket: string; key: string }>): Promise<boolean>;
  /**
   * The newest write-log entry for (bucket, key): who made its current
   * version, when casket made it. A refused write asks it whether it is a
   * retry of that very write (s3/write.ts). Shared by every replica.
   */
  lastWrite(bucket: string, key: string): Promise<WriteLogEntry | undefined>;

  /**
   * Everything a committed write records, in ONE step — one round trip
   * (redis: one script): the agent's stamp (set to the version made, or
   * dropped by a delete), the write-log entry, and the ETag-index entries
   * the backend handed over (CommittedWrite.index) instead of writing them
   * itself. Absent (sqlite, memory: no round trip to save): the caller
   * makes recordWrite / forgetStamp / appendWriteLog one by one, and the
   * backend writes its index entries at once.
   */
  recordCommittedWrite?(write: CommittedWrite): Promise<void>;

  /** s3 backend: the SHA-256 ETag of (bucket, key) at the upstream's ETag. */
  getIndexedETag(bucket: string, key: string, upstreamETag: string): Promise<string | undefined>;
  putIndexedETag(bucket: string, key: string, upstreamETag: string, etag: string): Promise<void>;
  /**
   * getIndexedETag for many (key, upstream ETag) pairs of one bucket, in one
   * round trip (one SELECT, one MGET): a listing page asks once, not once per
   * key. Answers in the order asked, undefined where not indexed.
   */
  getIndexedETags(bucket: string, entries: ReadonlyArray<readonly [key: string, upstreamETag: string]>): Promise<Array<string | undefined>>;

  /**
   * s3 backend: digests of an uploaded part, for the composite ETag at
   * completion. Kept per (part number, MD5): a part number sent several
   * times (concurrently, or retried with other bytes) has several, and
   * completion takes the one whose MD5 is the part the upstream holds. A put
   * of a (part number, MD5) already recorded replaces it and makes it the latest.
   */
  putPartDigest(uploadId: string, part: PartDigest): Promise<void>;
  /** Every digest recorded for the upload, by part number, and for one part number oldest first. */
  getPartDigests(uploadId: string): Promise<PartDigest[]>;
  deletePartDigests(uploadId: string): Promise<void>;

  /**
   * STS: keeps a minted credential until SESSION_GRACE_MS past its expiry
   * (memory and sqlite also keep at most maxEntries, forgetting the oldest
   * (memory) or soonest to expire (sqlite) first; redis is bounded by that expiry alone, as its ETag index).
   */
  putSession(session: SessionRecord): Promise<void>;
  /** The record, expired or revoked ones included, while it is kept. */
  getSession(accessKeyId: string): Promise<SessionRecord | undefined>;
  /** Marks a session revoked; false when the store does not know it. */
  revokeSession(accessKeyId: string): Promise<boolean>;
  /** The agent's sessions still kept (expired and revoked ones included), soonest to expire first: what an operator sees of them. */
  listSessions(agent: string): Promise<SessionRecord[]>;

  /**
   * Console logout (console/session.ts): the session with this id is refused
   * by every casket sharing this store until `untilMs` (epoch ms, the
   * session's own expiry, after which it is refused anyway). Never evicted early.
   */
  revokeConsoleSession(id: string, untilMs: number): Promise<void>;
  consoleSessionRevoked(id: string): Promise<boolean>;

  /**
   * "Changed since you read" (src/changes/since-read.ts): where the agent's
   * reminders have got to in the write log, opaque to the store. One small
   * value per agent, forgotten after the TTL like a stamp; shared by every
   * replica, so a reminder given by one casket is not given again by another.
   */
  getReminderCursor(agent: string): Promise<string | undefined>;
  putReminderCursor(agent: string, cursor: string): Promise<void>;

  /**
   * MCP authorization grants (src/oauth/grants.ts), shared by every replica:
   * kept until `expiresAt`, never capped by maxEntries (a cap would log a
   * client out, not let one in). get answers undefined past expiresAt, and
   * list leaves such grants out.
   */
  putOAuthGrant(grant: OAuthGrant): Promise<void>;
  getOAuthGrant(id: string): Promise<OAuthGrant | undefined>;
  listOAuthGrants(): Promise<OAuthGrant[]>;
  /** false when the store did not know it. */
  deleteOAuthGrant(id: string): Promise<boolean>;
  /**
   * Atomically: when the grant's secretHash is `expected`, replaces it with
   * `next` (the next refresh token's), clears pendingCode and sets
   * lastUsedAt/expiresAt; true. Else changes nothing; false. A code or refresh
   * token is thus redeemed once, on whichever replica asks first.
   */
  swapOAuthSecret(id: string, expected: string, next: string, usedAt: number, expiresAt: number): Promise<boolean>;

  close(): Promise<void>;
}
