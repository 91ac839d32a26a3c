/**
 * What changed, for agents and their orchestrators (docs/design.md §6),
 * signed with SigV4 like any S3 request:
 *   GET /_casket/diff?bucket=B&key=K&from=ETAG&to=ETAG|current — any key that
 *       may read the object: a unified diff (text/x-diff) from a retained
 *       version to another or to the current one; JSON byte ranges for binary.
 *   GET /_casket/merge?bucket&key&base&current&sent — the three-way merge of
 *       a merge-conflict, with conflict markers (text/plain).
 *   GET /_casket/agents/{agent}/changes?since=CURSOR&wait=SECONDS — admin
 *       keys, or the agent's own key: the keys the agent read whose current
 *       version someone else wrote since, with writer, versions and diff link,
 *       and a cursor for the next call; long poll up to `wait` seconds.
 *
 * A version named by ETag is looked up as a version of the named key only
 * (retention/types.ts): an ETag kept for another key, readable or not, is
 * answered as one nobody kept — the same 404, so the answer does not even
 * tell that the ETag exists elsewhere (docs/design.md §14).
 *
 * Known gaps: the feed sees writes made through casket (the write log), not
 * writes made around it upstream.
 */
import { readWhole } from './backends/read-whole.js';
import type { CredentialLookup } from './auth/credentials.js';
import { verifySigV4, type AuthResult, type SignedRequest } from './auth/sigv4.js';
import { diffVersions, isText, type Version } from './changes/diff.js';
import { mergeText } from './changes/merge.js';
import { accessFor } from './s3/access.js';
import { objectResource } from './s3/actions.js';
import type { Services } from './s3/context.js';
import { diffPath } from './s3/write.js';
import { S3Error } from './vocabulary/errors.js';
import { unquoteETag } from './vocabulary/etag.js';

export interface EndpointResponse {
  status: number;
  /** A string is sent as is (with contentType); anything else as JSON. */
  body: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

function signed(req: SignedRequest, lookup: CredentialLookup): AuthResult {
  const auth = verifySigV4(req, lookup);
  if (!auth) throw new S3Error('AccessDenied', 'Sign this request with a casket access key, like any S3 request.');
  return auth;
}

/**
 * A diff or merge shows an object's content: only to a key that may read it
 * (docs/design.md §7). s3:GetObject, not s3:GetObjectVersion: a retained
 * version is one agents read or wrote of that key through casket, not a
 * version the bucket keeps (the same rule whether the bucket is versioned or not).
 */
function mayRead(auth: AuthResult, bucket: string, key: string): void {
  accessFor(auth.credential, () => {}).authorize({ action: 's3:GetObject', resource: objectResource(bucket, key) });
}

/**
 * A retained version of bucket/key for a caller another front door
 * authenticated (MCP edit_file's merge, src/mcp-door.ts): only when `auth` may
 * read that key, and only a version kept for that very key.
 */
export async function retainedFor(auth: AuthResult, services: Services, bucket: string, key: string, etag: string): Promise<Buffer | undefined> {
  mayRead(auth, bucket, key);
  return services.retainer?.get({ bucket, key, etag });
}

function required(query: URLSearchParams, name: string): string {
  const value = query.get(name);
  if (value === null || value === '') throw new S3Error('InvalidArgument', `The query parameter ${name} is required.`);
  return value;
}

const notKept = (what: string): EndpointResponse => ({ status: 404, body: { error: 'NoSuchVersion', message: `${what} is not retained: casket keeps the small versions agents read in full or wrote, within --retain-bytes and the stamp TTL. Read the object instead.` } });

/**
 * Who wrote a version, from the write log: its agent, or the access key of the
 * request without an agent that wrote it (as a 412 names it, s3/write.ts).
 * Nothing when the log has forgotten the write or cannot answer: a diff is
 * still served, its label saying only "a request without an agent".
 */
async function writerOf(services: Services, bucket: string, key: string, etag: string): Promise<Pick<Version, 'writer' | 'writerAccessKey'>> {
  const log = await services.state.listWriteLog({ bucket, key, limit: 100 }).catch(() => []);
  const entry = log.find((e) => e.newETag === etag);
  if (entry?.agent) return { writer: entry.agent };
  return entry?.accessKey ? { writerAccessKey: entry.accessKey } : {};
}

/** The content of a version of bucket/key: retained for that key, or the current object when it is that version. */
async function versionOf(services: Services, bucket: string, key: string, etag: string | 'current'): Promise<Version | undefined> {
  const kept = etag === 'current' ? undefined : await services.retainer?.get({ bucket, key, etag });
  if (kept) return { etag, content: kept, ...(await writerOf(services, bucket, key, etag)) };
  const limit = services.retainer?.maxObjectSize ?? 0;
  const reader = await services.backend.getObject(bucket, key);
  if (!reader) return etag === 'current' ? { etag: 'deleted', content: null } : undefined;
  const { info } = reader;
  if ((etag !== 'current' && info.etag !== etag) || info.size > limit) {
    reader.release?.();
    return undefined;
  }
  const content = await readWhole(reader);
  // The current version names its own agent; a person's version is looked up, as a retained one is.
  return { etag: info.etag, content, ...(info.writer ? { writer: info.writer } : await writerOf(services, bucket, key, info.etag)) };
}

export async function casketDiff(req: SignedRequest, lookup: CredentialLookup, services: Services, query: URLSearchParams): Promise<EndpointResponse> {
  return diffFor(signed(req, lookup), services, query);
}

/** The diff, for a caller another front door authenticated (the MCP tools, src/mcp/). */
export async function diffFor(auth: AuthResult, services: Services, query: URLSearchParams): Promise<EndpointResponse> {
  const bucket = required(query, 'bucket');
  const key = required(query, 'key');
  mayRead(auth, bucket, key);
  const from = unquoteETag(required(query, 'from'));
  const toParam = query.get('to') ?? 'current';
  const to = toParam === 'current' ? 'current' : unquoteETag(toParam);
  const older = await versionOf(services, bucket, key, from);
  if (!older) return notKept(`Version "${from}" of s3://${bucket}/${key}`);
  const newer = await versionOf(services, bucket, key, to);
  if (!newer) return notKept(to === 'current' ? `The current version of s3://${bucket}/${key} (too large)` : `Version "${to}" of s3://${bucket}/${key}`);
  // Paths as bucket/key, as the MCP tools name files (edit_file, apply_patch): one form in every diff.
  const diff = diffVersions(`${bucket}/${key}`, older, newer, services.diffMaxBytes ?? 65536);
  return {
    status: 200,
    body: diff.body,
    contentType: diff.contentType,
    headers: { 'x-casket-diff-from': `"${older.etag}"`, 'x-casket-diff-to': `"${newer.etag}"`, ...(diff.truncated && { 'x-casket-diff-truncated': 'true' }) },
  };
}

export async function casketMerge(req: SignedRequest, lookup: CredentialLookup, services: Services, query: URLSearchParams): Promise<EndpointResponse> {
  const auth = signed(req, lookup);
  const bucket = required(query, 'bucket');
  const key = required(query, 'key');
  mayRead(auth, bucket, key);
  const [base, current, sent] = await Promise.all(['base', 'current', 'sent'].map((name) => versionOf(services, bucket, key, unquoteETag(required(query, name)))));
  if (!base || !current || !sent) return notKept(`One of the versions of this merge of s3://${bucket}/${key}`);
  if (![base, current, sent].every((v) => v.content && isText(v.content))) return { status: 400, body: { error: 'InvalidRequest', message: 'Only text versions merge.' } };
  const merged = mergeText(base.content!.toString('utf8'), sent.content!.toString('utf8'), current.content!.toString('utf8'), {
    base: `base "${base.etag}"`,
    current: `current "${current.etag}"${current.writer ? ` (agent "${current.writer}")` : ''}`,
    sent: `yours "${sent.etag}"`,
  });
  return { status: 200, body: merged.text, contentType: 'text/plain; charset=utf-8', headers: { 'x-casket-merge-clean': String(merged.clean), 'x-casket-merge-base': `"${base.etag}"`, 'x-casket-merge-current': `"${current.etag}"` } };
}

/** The longest long poll, and how often it looks again (the write log is shared: another replica's write shows). */
const MAX_WAIT_SECONDS = 60;
const POLL_MS = 250;

export async function agentChanges(req: SignedRequest, lookup: CredentialLookup, services: Services, agent: string, query: URLSearchParams): Promise<EndpointResponse> {
  return changesFor(signed(req, lookup), services, agent, query);
}

/**
 * The changes feed, for a caller another front door authenticated (the MCP
 * tools, src/mcp/). `actingAs`: the door verified that this caller acts as
 * `agent` (an MCP session of a key bound to no agent, minted `--agent`): it
 * gets the agent's changes to the keys its own policy lets it read, since
 * such a key may claim any agent and the agent's reads are not its to see.
 */
export async function changesFor(auth: AuthResult, services: Services, agent: string, query: URLSearchParams, actingAs = false): Promise<EndpointResponse> {
  const own = auth.credential.admin === true || auth.credential.agent === agent;
  if (!own && !actingAs) throw new S3Error('AccessDenied', `Only admin keys and agent "${agent}"'s own keys may read its changes.`);
  const access = accessFor(auth.credential, () => {});
  const sinceParam = query.get('since');
  const since = sinceParam === null || sinceParam === '' ? 0 : Number(sinceParam);
  if (!Number.isInteger(since) || since < 0) throw new S3Error('InvalidArgument', 'since must be a cursor from an earlier answer (or absent).');
  const wait = Math.min(Math.max(Number(query.get('wait') ?? '0') || 0, 0), MAX_WAIT_SECONDS);
  const deadline = Date.now() + wait * 1000;
  for (;;) {
    const changes = (await changesSince(services, agent, since)).filter((c) => own || access.allows({ action: 's3:GetObject', resource: objectResource(c.bucket, c.key) }));
    if (changes.length > 0 || Date.now() >= deadline) {
      const cursor = Math.max(since, ...changes.map((c) => c.cursor));
      return { status: 200, body: { agent, cursor: String(cursor), changes: changes.map(({ cursor: _, ...c }) => c) } };
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(deadline - Date.now(), 0))));
  }
}

interface Change {
  bucket: string;
  key: string;
  /** The version the agent last read (or wrote). */
  readETag: string;
  /** The current version; null: deleted. */
  currentETag: string | null;
  writer: string | null;
  /** The access key id of the write when no agent made it (the same rule as a 412 and a diff). */
  writerAccessKey: string | null;
  operation: string;
  at: string;
  /** Path of the diff, when the version the agent read is retained. */
  diff: string | null;
  cursor: number;
}

/** The keys the agent read whose newest write is someone else's and newer than `since` (epoch ms). */
async function changesSince(services: Services, agent: string, since: number): Promise<Change[]> {
  const stamps = await services.state.listStamps(agent);
  const out: Change[] = [];
  await Promise.all(
    stamps.map(async ({ bucket, key, stamp }) => {
      const last = await services.state.lastWrite(bucket, key);
      if (!last || last.at.getTime() <= since || last.agent === agent || (last.newETag ?? null) === stamp.etag) return;
      const kept = last.newETag !== undefined && (await services.retainer?.touch({ bucket, key, etag: stamp.etag }));
      out.push({
        bucket,
        key,
        readETag: `"${stamp.etag}"`,
        currentETag: last.newETag ? `"${last.newETag}"` : null,
        writer: last.agent ?? null,
        writerAccessKey: last.agent === undefined ? (last.accessKey ?? null) : null,
        operation: last.operation,
        at: last.at.toISOString(),
        diff: kept ? diffPath(bucket, key, stamp.etag, last.newETag!) : null,
        cursor: last.at.getTime(),
      });
    }),
  );
  return out.sort((a, b) => a.cursor - b.cursor || (a.bucket + a.key < b.bucket + b.key ? -1 : 1));
}
