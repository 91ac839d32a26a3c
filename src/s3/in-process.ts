/**
 * An S3 request made inside casket — an MCP tool's (src/mcp-door.ts), a
 * rollback's (src/rollback/door.ts) — runs through handleS3 as one from the
 * wire: the same policy check, agent identity, guard, compare-and-swap at
 * commit, read stamps, write log, retention, events and metrics
 * (docs/design.md §8, "one guard"; never a second compare-and-swap). Only
 * the signature step differs: the caller was authenticated another way
 * (a bearer token, a signed MCP request, an admin's rollback), and
 * handleS3 takes that result as `verified`.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Credential } from '../auth/credentials.js';
import type { S3Call } from '../vocabulary/s3-call.js';
import type { AuthResult } from '../auth/sigv4.js';
import type { Services } from './context.js';
import { handleS3, type HandleOptions, type Outcome } from './handle.js';


/** Who the request comes from, as its headers say: the User-Agent it names (so ETags come back in their plain form: s3/handle.ts suffixes them for clients without one), and the agent it acts for. */
export interface InProcessClient {
  userAgent: string;
  agent?: string;
}

function encodeKey(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

/**
 * The Host of every in-process request. The call names its bucket in the path
 * (path style); a Host with no dot never ends in "." + --domain, so
 * s3/addressing.ts never reads a bucket from it whatever the domain (a Host
 * of "casket.mcp" was bucket "casket" under --domain mcp).
 */
const HOST = 'casket-in-process';

/** The SHA-256 of no bytes: most calls (reads, HEADs, deletes) have no body, and need not hash it each time. */
const EMPTY_SHA256 = createHash('sha256').digest('hex');

/** Runs `call` as `credential` (the caller already authenticated): the outcome with its response body still to read. */
export async function callInProcess(services: Services, options: HandleOptions, credential: Credential, client: InProcessClient, call: S3Call): Promise<Outcome> {
  const body = call.body ?? Buffer.alloc(0);
  const sha256 = call.body ? createHash('sha256').update(body).digest('hex') : EMPTY_SHA256;
  const headers: Record<string, string> = { host: HOST, 'user-agent': client.userAgent, 'x-amz-content-sha256': sha256, ...call.headers };
  if (call.body) headers['content-length'] = String(body.length);
  // The agent the caller acts for: resolveAgent (guard/identity.ts) refuses a key bound to another.
  if (client.agent !== undefined) headers[options.agentHeader] = client.agent;
  // Every header casket sets counts as signed (x-casket-merge must be).
  const verified: AuthResult = { credential, presigned: false, payloadMode: 'literal', declaredSha256: sha256, signedHeaders: Object.keys(headers), region: services.region };
  const path = `/${encodeURIComponent(call.bucket)}${call.key !== undefined ? `/${encodeKey(call.key)}` : ''}`;
  return handleS3(
    { method: call.method, url: call.query ? `${path}?${call.query}` : path, headers, body: Readable.from(call.body ? [body] : []), sendContinue: () => {}, verified },
    services,
    options,
  );
}

/**
 * A response body whole, or undefined past `maxBytes`. `past`: 'stop' ends
 * the read there (the reader is shown less than all: no full read), 'drain'
 * reads on to the end all the same, so the read is a full one.
 */
export async function readBody(body: unknown, maxBytes: number, past: 'stop' | 'drain'): Promise<Buffer | undefined> {
  if (body === undefined) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body);
  if (Buffer.isBuffer(body)) return body.length <= maxBytes ? body : undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as Readable) {
    size += (chunk as Buffer).length;
    if (size <= maxBytes) {
      chunks.push(chunk as Buffer);
      continue;
    }
    chunks.length = 0;
    if (past === 'stop') {
      (body as Readable).destroy();
      return undefined;
    }
  }
  return size <= maxBytes ? Buffer.concat(chunks) : undefined;
}
