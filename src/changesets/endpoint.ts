/**
 * `POST /_casket/commit?bucket=B` (issue 39): a changeset over HTTP, for
 * programs. Signed with SigV4 like every /_casket endpoint and S3 request,
 * by any access key: each entry needs s3:PutObject (or s3:DeleteObject) on
 * its key, and an agent's entries follow the agent rules (the agent header
 * or the key's bound agent, as on S3 requests).
 *
 * The body is multipart/form-data (RFC 7578), streamed with busboy — never
 * buffered whole:
 *   - first a field named `manifest`, JSON:
 *       {"entries": [{"key": "src/a.ts", "if-match": "\"<etag>\"", "content-type": "text/plain"},
 *                    {"key": "src/new.ts", "if-none-match": "*"},
 *                    {"key": "src/old.ts", "if-match": "\"<etag>\"", "delete": true}]}
 *   - then one file part per entry that is not a delete, in the manifest's
 *     order, named after the entry's index (`0`, `1`, …).
 * Limits: 1,000 entries, 100 MiB of bodies (commit.ts); past them, 400.
 *
 * The payload hash: a literal x-amz-content-sha256 is checked against the
 * whole body as it streams, before anything is committed;
 * UNSIGNED-PAYLOAD is taken as S3 takes it.
 *
 * Answers (JSON): 200 {changeset, landed: [{key, etag, versionId?}]};
 * 412 {error: "PreconditionFailed", changeset, refused: [{key, error, reason,
 * message, ...the S3 refusal's fields}]} — nothing written; 400/403/503 {error, message}.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { signedRequestFromNode, verifySigV4, UNSIGNED_PAYLOAD } from '../auth/sigv4.js';
import type { CredentialLookup } from '../auth/credentials.js';
import { resolveAgent } from '../guard/identity.js';
import { accessFor } from '../s3/access.js';
import type { Services } from '../s3/context.js';
import { refusalError } from '../s3/refusal-error.js';
import { writeConditionsFrom } from '../s3/write.js';
import { S3Error, isS3Error } from '../vocabulary/errors.js';
import { formatETag } from '../vocabulary/etag.js';
import { ChangesetRefused, commitChangeset, MAX_ENTRIES, MAX_TOTAL_BYTES, type ChangesetEngine, type ChangesetEntry } from './commit.js';
import type { StagedBody } from './intent.js';

export const COMMIT_PATH = '/_casket/commit';

/** Largest manifest: 1,000 entries of long keys and ETags. */
const MAX_MANIFEST = 4 * 1024 * 1024;

interface ManifestEntry {
  key: string;
  'if-match'?: string;
  'if-none-match'?: string;
  'content-type'?: string;
  delete?: boolean;
}

export interface CommitResponse {
  status: number;
  body: unknown;
}

function bad(message: string): S3Error {
  return new S3Error('InvalidRequest', message);
}

export function parseManifest(text: string): ManifestEntry[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw bad('The manifest is not JSON.');
  }
  const entries = (json as { entries?: unknown })?.entries;
  if (!Array.isArray(entries)) throw bad('The manifest needs "entries": an array.');
  if (entries.length > MAX_ENTRIES) throw bad(`A changeset holds at most ${MAX_ENTRIES} entries; this one has ${entries.length}. Split it.`);
  return entries.map((e: unknown, i) => {
    const m = e as ManifestEntry;
    if (typeof m !== 'object' || m === null || typeof m.key !== 'string' || m.key === '') throw bad(`Entry ${i} needs a "key".`);
    for (const f of ['if-match', 'if-none-match', 'content-type'] as const) if (m[f] !== undefined && typeof m[f] !== 'string') throw bad(`Entry ${i}: "${f}" must be a string.`);
    if (m.delete !== undefined && typeof m.delete !== 'boolean') throw bad(`Entry ${i}: "delete" must be true or false.`);
    return m;
  });
}

export async function commitEndpoint(incoming: IncomingMessage | undefined, services: Services, engine: ChangesetEngine, lookup: CredentialLookup, agentHeader: string): Promise<CommitResponse> {
  const id = engine.dir.newId();
  // Staged bodies of a changeset that never reached the engine are removed here; the engine removes the rest.
  let handedOver = false;
  try {
    if (!incoming) throw new Error('the commit endpoint needs a socket');
    const req = signedRequestFromNode(incoming.method ?? 'POST', incoming.url ?? COMMIT_PATH, incoming.rawHeaders);
    const auth = verifySigV4(req, lookup);
    if (!auth) throw new S3Error('AccessDenied', 'Sign changeset requests with a casket access key, like any S3 request.');
    const bucket = new URLSearchParams(req.rawQuery).get('bucket');
    if (!bucket) throw new S3Error('InvalidArgument', 'The query parameter bucket is required.');
    const agent = resolveAgent(auth.credential.agent, req.headers[agentHeader]);
    const access = accessFor(auth.credential, () => {});
    const literal = auth.declaredSha256;
    if (literal === undefined && auth.payloadMode !== 'unsigned') throw new S3Error('InvalidRequest', `Sign the changeset with the SHA-256 of its body or ${UNSIGNED_PAYLOAD}.`);
    const entries = await receive(incoming, engine, id, bucket, literal);
    handedOver = true;
    const result = await commitChangeset(services, engine, { requestId: id, agent, accessKey: auth.credential.accessKeyId, access }, id, entries);
    services.log.info({ changeset: id, bucket, agent, entries: entries.length, applyMs: Math.round(result.applyMs * 10) / 10 }, 'changeset committed');
    return { status: 200, body: { changeset: id, landed: result.landed.map((l) => ({ key: l.key, etag: l.etag === null ? null : formatETag(l.etag, false), ...(l.versionId !== undefined && { versionId: l.versionId }) })) } };
  } catch (e) {
    if (e instanceof ChangesetRefused) {
      const refused = e.refusals.map((r) => {
        const err = refusalError(r, false);
        return { key: r.key, error: err.code, reason: r.reason, message: err.message, ...err.fields };
      });
      return { status: 412, body: { error: 'PreconditionFailed', changeset: id, message: `${e.message}.`, refused } };
    }
    if (isS3Error(e)) return { status: e.status, body: { error: e.code, message: e.message } };
    services.log.error({ err: e, changeset: id }, 'changeset failed');
    return { status: 500, body: { error: 'InternalError', changeset: id, message: 'The changeset stopped. If it had decided, casket finishes it at its next start.' } };
  } finally {
    if (!handedOver) await engine.dir.discard(id);
    // A request refused before its body was read: drain it, so the answer reaches the client.
    if (incoming && !incoming.readableEnded) incoming.resume();
  }
}

/** Streams the multipart body: the manifest, then each body to its staging file. */
function receive(incoming: IncomingMessage, engine: ChangesetEngine, id: string, bucket: string, literalSha256: string | undefined): Promise<ChangesetEntry[]> {
  return new Promise<ChangesetEntry[]>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: incoming.headers, limits: { fieldSize: MAX_MANIFEST, fields: 1, fileSize: MAX_TOTAL_BYTES + 1 } });
    } catch {
      reject(bad('Send the changeset as multipart/form-data: a "manifest" field, then one part per body.'));
      return;
    }
    const whole = createHash('sha256');
    let manifest: ManifestEntry[] | undefined;
    let failed: unknown;
    let total = 0;
    const staged = new Map<number, Promise<StagedBody>>();
    const streaming = new Set<Readable>();
    const fail = (e: unknown) => {
      failed ??= e;
    };
    // A client that hangs up mid-body, or one the body timeout cut (which
    // ends the request, body-timeout.ts): busboy never finishes, so end the
    // parts being staged here, wait for their files to close, and refuse —
    // the caller's finally then removes the staging.
    incoming.once('close', () => {
      if (incoming.readableEnded) return;
      const cut = new S3Error('IncompleteBody');
      fail(cut);
      incoming.unpipe(parser);
      for (const stream of streaming) stream.destroy(cut);
      void Promise.allSettled(staged.values()).then(() => reject(cut));
    });
    parser.on('field', (name, value) => {
      if (name !== 'manifest' || manifest !== undefined) return fail(bad(`Unexpected field "${name}": the body holds one "manifest" field, then file parts.`));
      try {
        manifest = parseManifest(value);
      } catch (e) {
        fail(e);
      }
    });
    parser.on('file', (name, stream) => {
      const n = /^\d+$/.test(name) ? Number(name) : -1;
      const entry = manifest?.[n];
      if (failed || !manifest || !entry || entry.delete || staged.has(n)) {
        if (!failed) fail(bad(manifest ? `Part "${name}" names no entry with a body (parts are named after their entry's index, once each).` : 'The "manifest" field must come before the bodies.'));
        stream.resume();
        return;
      }
      streaming.add(stream);
      stream.once('close', () => streaming.delete(stream));
      const body = engine.dir.stage(id, n, stream, MAX_TOTAL_BYTES - total, () => new S3Error('EntityTooLarge', `A changeset's bodies total at most ${MAX_TOTAL_BYTES} bytes.`));
      body.then((b) => (total += b.size), fail);
      staged.set(n, body);
    });
    incoming.on('data', (chunk: Buffer) => whole.update(chunk));
    parser.on('error', (e) => reject(bad(`The multipart body does not parse: ${(e as Error).message}`)));
    parser.on('close', () => {
      void (async () => {
        const bodies = new Map<number, StagedBody>();
        for (const [n, p] of staged) bodies.set(n, await p.catch((e: unknown) => (fail(e), undefined as unknown as StagedBody)));
        if (failed) return reject(failed);
        if (!manifest) return reject(bad('The body has no "manifest" field.'));
        if (literalSha256 !== undefined && whole.digest('hex') !== literalSha256) return reject(new S3Error('XAmzContentSHA256Mismatch'));
        const entries: ChangesetEntry[] = [];
        for (const [i, m] of manifest.entries()) {
          const body = bodies.get(i);
          if (!m.delete && !body) return reject(bad(`Entry ${i} (${m.key}) has no body part named "${i}": send one, or mark the entry "delete": true.`));
          const headers: Record<string, string> = {};
          if (m['if-match'] !== undefined) headers['if-match'] = m['if-match'];
          if (m['if-none-match'] !== undefined) headers['if-none-match'] = m['if-none-match'];
          entries.push({ bucket, key: m.key, conditions: writeConditionsFrom(headers), ...(body && { body }), ...(m['content-type'] !== undefined && { contentType: m['content-type'] }) });
        }
        resolve(entries);
      })().catch(reject);
    });
    incoming.pipe(parser);
  });
}
