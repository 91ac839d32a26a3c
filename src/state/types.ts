/**
 * casket's own state, apart from object data: read stamps (what each agent
 * last read, and whether whole — DESIGN §4), the write log (who replaced
 * which version with which), and the ETag index of the s3 backend (the
 * SHA-256 ETag kept against the upstream's own ETag — DESIGN §2).
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
   * The request's `amz-sdk-invocation-id`: AWS SDKs keep it across their
   * automatic retries, so with the access key it names the very write a retry
   * repeats (DESIGN §3, exact retries).
   */
  invocationId?: string;
}

export interface WriteLogQuery {
  bucket?: string;
  key?: string;
  agent?: string;
  limit: number;
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

export interface StateLimits {
  /** Stamps and log entries older than this are forgotten. */
  ttlMs: number;
  /** At most this many stamps (oldest forgotten first); the write log keeps as many entries. */
  maxEntries: number;
}

export const DEFAULT_STATE_LIMITS: StateLimits = { ttlMs: 7 * 24 * 3600 * 1000, maxEntries: 1_000_000 };

export interface StateStore {
  /** Merges one delivered byte range into the agent's stamp for this key, atomically. */
  recordRead(agent: string, bucket: string, key: string, read: ReadEvent): Promise<ReadStamp>;
  /** The agent's own write counts as a full read of what it wrote. */
  recordWrite(agent: string, bucket: string, key: string, etag: string, size: number): Promise<void>;
  getStamp(agent: string, bucket: string, key: string): Promise<ReadStamp | undefined>;
  listStamps(agent: string): Promise<StampEntry[]>;
  /** Drops the agent's stamp for a key it deleted. */
  forgetStamp(agent: string, bucket: string, key: string): Promise<void>;

  appendWriteLog(entry: WriteLogEntry): Promise<void>;
  listWriteLog(query: WriteLogQuery): Promise<WriteLogEntry[]>;
  /**
   * The newest write-log entry for (bucket, key): who made its current
   * version, when casket made it. A refused write asks it whether it is a
   * retry of that very write (s3/write.ts). Shared by every replica.
   */
  lastWrite(bucket: string, key: string): Promise<WriteLogEntry | undefined>;

  /** s3 backend: the SHA-256 ETag of (bucket, key) at the upstream's ETag. */
  getIndexedETag(bucket: string, key: string, upstreamETag: string): Promise<string | undefined>;
  putIndexedETag(bucket: string, key: string, upstreamETag: string, etag: string): Promise<void>;

  /** s3 backend: digests of an uploaded part, for the composite ETag at completion. */
  putPartDigest(uploadId: string, part: PartDigest): Promise<void>;
  getPartDigests(uploadId: string): Promise<PartDigest[]>;
  deletePartDigests(uploadId: string): Promise<void>;

  close(): Promise<void>;
}
