/**
 * How the rollback reads and writes: S3 requests run through s3/handle.ts
 * in-process, as src/mcp-door.ts does for the MCP tools — the same guard,
 * compare-and-swap at commit, read stamps, write log and retention as a
 * request from the wire, never a second compare-and-swap (docs/design.md §10).
 *
 * The caller is the admin who asked for the rollback, acting as the agent
 * `rollback:<agent>` (plan.ts): the write log names both, so a restore is
 * told apart from the agent's own writes and can itself be rolled back.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Credential } from '../auth/credentials.js';
import type { AuthResult } from '../auth/sigv4.js';
import type { Services } from '../s3/context.js';
import { handleS3, type HandleOptions } from '../s3/handle.js';

export interface S3Call {
  method: 'GET' | 'PUT' | 'DELETE';
  bucket: string;
  key?: string;
  /** Already encoded. */
  query?: string;
  headers?: Record<string, string>;
  body?: Buffer;
}

export interface S3Reply {
  status: number;
  headers: Record<string, string>;
  /** Absent on a failure, and past the `keep` bytes the caller asked for. */
  body?: Buffer;
  /** The S3 error code of a failure. */
  code?: string;
}

/**
 * `stamp`: the read counts as the rollback agent's full read (default true).
 * `keep`: the most body bytes held in memory (default all); a longer body is
 * still read to its end.
 */
export type RollbackDoor = (call: S3Call, read?: { stamp?: boolean; keep?: number }) => Promise<S3Reply>;

function encodeKey(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

/** The whole body, or undefined past `maxBytes` — read to its end all the same, so the read is a full one. */
async function readAll(body: unknown, maxBytes: number): Promise<Buffer | undefined> {
  if (body === undefined) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body);
  if (Buffer.isBuffer(body)) return body.length <= maxBytes ? body : undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as Readable) {
    size += (chunk as Buffer).length;
    if (size <= maxBytes) chunks.push(chunk as Buffer);
    else chunks.length = 0;
  }
  return size <= maxBytes ? Buffer.concat(chunks) : undefined;
}

/** A door for `admin` acting as agent `actingAs`. */
export function openRollbackDoor(services: Services, options: HandleOptions, admin: Credential, actingAs: string): RollbackDoor {
  // Bound to the rollback's agent name: resolveAgent (guard/identity.ts) takes it as the request's agent.
  const credential: Credential = { ...admin, agent: actingAs };
  return async (call, read) => {
    const body = call.body ?? Buffer.alloc(0);
    const sha256 = createHash('sha256').update(body).digest('hex');
    // A User-Agent, so ETags come back in their plain form (s3/handle.ts suffixes them for clients without one).
    const headers: Record<string, string> = { host: 'casket.rollback', 'user-agent': 'casket-rollback', 'x-amz-content-sha256': sha256, ...call.headers };
    if (call.body) headers['content-length'] = String(body.length);
    const verified: AuthResult = { credential, presigned: false, payloadMode: 'literal', declaredSha256: sha256, signedHeaders: Object.keys(headers), region: services.region };
    const path = `/${encodeURIComponent(call.bucket)}${call.key !== undefined ? `/${encodeKey(call.key)}` : ''}`;
    const outcome = await handleS3(
      { method: call.method, url: call.query ? `${path}?${call.query}` : path, headers, body: Readable.from(call.body ? [body] : []), sendContinue: () => {}, verified },
      services,
      options,
    );
    const res = outcome.response;
    if (outcome.error) {
      if (res.body instanceof Readable) res.body.destroy();
      if (outcome.internal) services.log.error({ err: outcome.internal, requestId: outcome.requestId, bucket: call.bucket, key: call.key }, 'rollback: request failed');
      return { status: res.status, headers: res.headers, code: outcome.error.code };
    }
    const content = await readAll(res.body, read?.keep ?? Number.POSITIVE_INFINITY);
    // The read stamp: a read the restore stands on counts as the rollback agent's full read (docs/design.md §4).
    if (read?.stamp !== false) await res.onFinish?.(true);
    return { status: res.status, headers: res.headers, ...(content && { body: content }) };
  };
}
