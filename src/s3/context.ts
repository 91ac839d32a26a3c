/**
 * What every operation handler receives: the parsed request (who, what, which
 * conditions) and the services it may use. Built by server.ts; handlers never
 * see Hono or the socket.
 */
import type { Readable } from 'node:stream';
import type { AuthResult } from '../auth/sigv4.js';
import { createPayload, type PayloadOptions } from '../auth/payload.js';
import type { Backend, Payload } from '../backends/types.js';
import type { Guard } from '../guard/guard.js';
import type { StateStore } from '../state/types.js';
import type { Logger } from '../log.js';
import type { Retainer } from '../retention/retainer.js';
import type { AccessCheck } from './access.js';
import type { Operation } from './operations.js';
import type { S3Response } from './respond.js';
import type { Gate } from '../changesets/locks.js';

export interface RequestContext {
  requestId: string;
  operation: Operation;
  method: string;
  bucket: string | undefined;
  key: string | undefined;
  query: URLSearchParams;
  /** Lowercased names; repeated headers joined with ','. */
  headers: Record<string, string>;
  auth: AuthResult | null;
  accessKey: string | undefined;
  /** The agent making the request (docs/design.md §4), or undefined for a person. */
  agent: string | undefined;
  /** The credential's policies (docs/design.md §7): checks beyond the one handle.ts made. */
  access: AccessCheck;
  /** Show plain ETags as `<sha256>-1` to this client (docs/design.md §2). */
  etagSuffix: boolean;
  /** Raw request body bytes; read them through `payload()`. */
  body: Readable;
  /**
   * The verified body: signatures, aws-chunked framing and checksums checked
   * as it streams. Answers `Expect: 100-continue` first — call it only once
   * auth and preconditions have passed.
   */
  payload(options?: Pick<PayloadOptions, 'md5' | 'checksum' | 'ignoreChecksumHeaders'>): Payload;
  /**
   * PostObject only: the form's fields (names lowercased), read before the
   * file (s3/post-form.ts). `headers` then holds what the fields say as
   * headers (operations/post-object.ts), `body` the file part.
   */
  postForm?: { fields: ReadonlyMap<string, string>; secure: boolean };
}

export interface Services {
  backend: Backend;
  guard: Guard;
  state: StateStore;
  /** Region GetBucketLocation reports. */
  region: string;
  /** Failures that happen after the response is sent (read stamps) are logged here. */
  log: Pick<Logger, 'error' | 'warn' | 'info'>;
  /** The versions agents saw, for diffs and merges (docs/design.md §6); absent: nothing is kept. */
  retainer?: Retainer;
  /** Pre-images of agent overwrites and deletes, for rollback (--keep-pre-images, s3/pre-image.ts); absent: off. */
  preImages?: Retainer;
  /** Largest diff /_casket/diff serves (--diff-max-bytes). */
  diffMaxBytes?: number;
  /** Where committed writes are told, for the event stream and webhooks (src/events/); absent: nobody listens. */
  events?: EventSink;
  /**
   * Per-key gates that order changesets against single writes and reads
   * (src/changesets/locks.ts; shared-gate.ts with --state redis); absent: no
   * changesets (single writes pay nothing).
   */
  gate?: Gate;
}

/**
 * A write casket committed, a retry it answered without writing, or a
 * refusal it answered: what src/events/ turns into an S3-shaped event record.
 * Plain values, so the write path knows nothing of the event log.
 */
export interface WriteNotice {
  kind: 'written' | 'exact-retry' | 'refused';
  operation: string;
  bucket: string;
  key: string;
  requestId: string;
  agent?: string;
  accessKey?: string;
  sourceIp?: string;
  /** The version written (absent: a delete); for a refusal, the version current. */
  etag?: string;
  size?: number;
  versionId?: string;
  previousETag?: string;
  /** The write is a delete that left a delete marker (versioned bucket). */
  deleteMarker?: boolean;
  /** The write is the merged content of a three-way merge (s3/merge-write.ts). */
  merged?: boolean;
  /** The write is one entry of a changeset (src/changesets/): its id, shared by the other entries. */
  changeset?: string;
  /** Refusals: casket's reason, the status and S3 error code answered, the current ETag. */
  reason?: string;
  status?: number;
  code?: string;
  currentETag?: string;
}

export interface EventSink {
  /** Appends the event; never throws (a failure is logged): the write it tells of has happened. */
  publish(notice: WriteNotice): Promise<void>;
}

export type Handler = (ctx: RequestContext, services: Services) => Promise<S3Response>;

/** Wires `payload()` to the request: 100-continue once, then the verified stream. */
export function payloadFactory(body: Readable, auth: AuthResult | null, headers: Record<string, string>, sendContinue: () => void): RequestContext['payload'] {
  return (options = {}) => {
    sendContinue();
    return createPayload(body, { ...options, auth, headers, md5: options.md5 ?? false });
  };
}

export function requireBucket(ctx: RequestContext): string {
  if (!ctx.bucket) throw new Error('operation without a bucket');
  return ctx.bucket;
}

export function requireKey(ctx: RequestContext): { bucket: string; key: string } {
  if (!ctx.bucket || ctx.key === undefined) throw new Error('operation without a key');
  return { bucket: ctx.bucket, key: ctx.key };
}

/** Whether the request carries a body at all (Content-Length > 0 or a chunked transfer). */
export function hasBody(ctx: RequestContext): boolean {
  const length = ctx.headers['content-length'];
  return (length !== undefined && length !== '0') || ctx.headers['transfer-encoding'] !== undefined;
}
