/**
 * What an MCP tool may do in casket: the seam between the tools and the S3
 * front door (docs/design.md §8, "one guard").
 *
 * A tool call is made of ordinary S3 requests — GetObject, PutObject with
 * If-Match, HeadObject, ListObjectsV2, CopyObject, DeleteObject — which the
 * wiring (src/mcp-door.ts) runs through s3/in-process.ts and s3/handle.ts, with the
 * caller the MCP endpoint authenticated. So a tool call passes exactly the
 * same policy check, agent identity, guard, read stamps, write log,
 * retention, metrics and state store as a request from the wire, and there
 * is no second compare-and-swap: the backend's atomic conditional commit is
 * the only one. An agent that reads over MCP and writes over S3 is one agent
 * with one set of stamps, because both go down the same path.
 *
 * This folder imports nothing from s3/: it speaks the S3 wire (method, path,
 * headers, body) to the door it is given, and reads S3 answers (status,
 * headers, the error's fields) back.
 */
import type { S3Call } from '../vocabulary/s3-call.js';

/** Who is calling, as the MCP endpoint authenticated them. */
export interface Caller {
  accessKeyId: string;
  /** The agent the token or key is bound to (docs/design.md §4); undefined: a person. */
  agent?: string;
}

export type { S3Call };

/** An S3 error as casket rendered it: its code, sentence and fields (CurrentETag, LastWriter, Reason, Diff...). */
export interface S3Failure {
  status: number;
  code: string;
  message: string;
  fields: Record<string, string | undefined>;
}

export interface S3Answer {
  status: number;
  headers: Record<string, string>;
  /** The body, read whole up to the call's limit; undefined for HEAD and empty answers. */
  body?: Buffer;
  /** Set when the answer is an error. */
  failure?: S3Failure;
}

/** A file the agent read whole that someone else has written since. */
export interface ChangedFile {
  bucket: string;
  key: string;
  /** The version the agent read (unquoted). */
  readETag: string;
  /** The version now (unquoted); undefined: deleted. */
  etag?: string;
  /** The writer's agent, or the access key of a request without one. */
  changedBy: string;
  /** ISO 8601. */
  changedAt: string;
}

export type StampKind = 'full' | 'partial' | 'none';

export interface ReadOptions {
  /** Refuse bodies larger than this (the answer is then a failure `EntityTooLarge`). */
  maxBytes: number;
  /**
   * Whether the agent is shown the whole object: 'full', a full read stamp
   * (docs/design.md §4); 'partial', a partial one (head/tail/offset reads); 'none',
   * no read at all — edit_file reads the version its condition names only
   * to apply the edits, which entitles nothing (the guard still judges the
   * write on what the agent itself read). A function decides once the body
   * is read (a `head` that covers every line showed the whole object).
   */
  stamp: StampKind | ((body: Buffer) => StampKind);
}

export interface ReadStampView {
  etag: string;
  full: boolean;
}

/** An HTTP request to the MCP endpoint, for authentication: lowercased header names. */
export interface EndpointRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** One file of a changeset a tool commits (write_files, apply_patch). */
export interface ChangesetFile {
  bucket: string;
  key: string;
  /** The new content; absent: the file is deleted. */
  content?: Buffer;
  contentType?: string;
  /** S3 condition headers, as on a single write: if-match / if-none-match; none: the agent rules derive one. */
  headers: Record<string, string>;
}

/** What a changeset came to: every file landed, or none did and these were refused (each as its single write's S3 error). */
export type ChangesetAnswer =
  | { landed: Array<{ bucket: string; key: string; etag: string | null }> }
  | { refused: Array<{ bucket: string; key: string; failure: S3Failure }> }
  | { failure: S3Failure }
  /** Decided, its entries still being applied (changesets/commit.ts ChangesetLanding): it lands whole, nothing to send again. */
  | { landing: S3Failure };

/** Credentials were given and do not hold (a bad token or signature, a key bound to another agent). */
export class NotAuthenticated extends Error {}

export interface CasketDoor {
  /**
   * Who sent an MCP request: `Authorization: Bearer <token>` (token.ts) or a
   * SigV4 signature, as any S3 request (a literal payload hash is checked
   * against the body). undefined: no credentials at all.
   */
  authenticate(req: EndpointRequest): Promise<Caller | undefined>;
  /** One S3 request as `caller`, through s3/handle.ts. GET answers are read per `read`. */
  s3(caller: Caller, call: S3Call, read?: ReadOptions): Promise<S3Answer>;
  /** GET /_casket/diff for `caller` (docs/design.md §6): a unified diff, or undefined when a version is not retained. */
  diff(caller: Caller, bucket: string, key: string, from: string, to: string): Promise<{ text: string; truncated: boolean } | undefined>;
  /** The agent's changes feed (docs/design.md §6). */
  changes(caller: Caller, since: string | undefined): Promise<{ status: number; body: unknown }>;
  /**
   * Several writes and deletes that land together or not at all
   * (src/changesets/commit.ts): each file is judged by the one guard as its
   * single write would be.
   */
  commit(caller: Caller, files: ChangesetFile[]): Promise<ChangesetAnswer>;
  /**
   * Whether `caller` may delete bucket/key under `headers`' conditions now,
   * judged as that DELETE would be (its policy, then the one guard's rules),
   * without deleting: for a tool whose last step is that delete (move_file),
   * so a refusal that is already certain comes before its first write. The
   * DELETE itself is still guarded (the commit decides).
   */
  mayDelete(caller: Caller, bucket: string, key: string, headers: Record<string, string>): Promise<S3Failure | undefined>;
  /** The agent's read stamp of a key, as the guard sees it. */
  stamp(agent: string, bucket: string, key: string): Promise<ReadStampView | undefined>;
  /**
   * A retained version of bucket/key (docs/design.md §6), for a merge whose base
   * is no longer current: only when `caller` may read that key, and only a
   * version kept for that very key — an ETag kept for another key is
   * undefined, as one nobody kept (docs/design.md §14).
   */
  retained(caller: Caller, bucket: string, key: string, etag: string): Promise<Buffer | undefined>;
  /**
   * Who wrote a version, from the write log (the agent, else the access key
   * id; never a secret): for a refusal whose HEAD names no agent, so it says
   * what the diff says. Empty when the log does not know.
   */
  writerOf(bucket: string, key: string, etag: string): Promise<{ agent?: string; accessKey?: string }>;
  /**
   * The files the caller's agent read whole that someone else has changed
   * since, each told once (src/changes/since-read.ts); nothing for a caller
   * without an agent.
   */
  changedSinceRead(caller: Caller): Promise<ChangedFile[]>;
  /** `--agent-writes`: require (428 on unconditional agent writes) or read-stamp. */
  agentWrites: 'require' | 'read-stamp';
  /** Largest diff served (--diff-max-bytes). */
  diffMaxBytes: number;
}
