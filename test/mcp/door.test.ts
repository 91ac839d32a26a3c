/**
 * The MCP endpoint's door (src/mcp-door.ts): who a request is — a bearer
 * token exactly as RFC 6750 §2.1 frames it (`Bearer` 1*SP b64token, nothing
 * around it), or SigV4 as S3 takes it (a query string on the path, an
 * UNSIGNED-PAYLOAD body, a session minted by casket's STS) — and what a tool
 * may read: no more than --mcp-max-file-bytes. Started with startMcpCasket,
 * so `npm run mutate:rooms` (ROOM=mcp) runs these in-process.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { call, data, httpClient, mcpEndpoint, mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';
import { missing, viewsOf } from '../helpers/model-view.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';

const bucket = 'door';
const ACCEPT = 'application/json, text/event-stream';
const LIMIT = 1024;
const DIFF_LIMIT = 64;
/** The largest version casket keeps for diffs (--retain-max-size): a file read between it and LIMIT is shown, not kept. */
const RETAIN_LIMIT = 512;
let casket: McpCasket;

beforeAll(async () => {
  casket = await startMcpCasket({
    agents: ['sig'],
    keys: {
      person: {},
      // A second key of agent sig, that may read only door/open/*: one agent, two policies.
      narrow: { agent: 'sig', policy: { Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:ListBucket'], Resource: [`arn:aws:s3:::${bucket}/open/*`] }] } },
      // A person's key bound to no agent that may read only door/open/*: it may act as any agent, with its own policy.
      limited: { policy: { Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:ListBucket'], Resource: [`arn:aws:s3:::${bucket}/open/*`] }] } },
    },
    flags: { mcpMaxFileBytes: String(LIMIT), diffMaxBytes: String(DIFF_LIMIT), retainMaxSize: String(RETAIN_LIMIT) },
  });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'small.txt', Body: 'small\n' }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'big.txt', Body: 'x'.repeat(LIMIT + 1) }));
  admin.destroy();
});
afterAll(async () => {
  await casket?.stop();
});

const rpc = (id: number, method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id, method, params });
const readSmall = rpc(1, 'tools/call', { name: 'read_text_file', arguments: { path: `${bucket}/small.txt` } });

function withAuthorization(authorization: string): Promise<Response> {
  return fetch(mcpEndpoint(casket), { method: 'POST', headers: { authorization, 'content-type': 'application/json', accept: ACCEPT }, body: readSmall });
}

describe('the bearer token, as RFC 6750 §2.1 frames it', () => {
  it('takes "Bearer <token>" with any case and spaces between; refuses a header that holds the token among other words', async () => {
    const token = mintToken(casket.agents.sig!);
    for (const ok of [`Bearer ${token}`, `bearer  ${token}`]) expect((await withAuthorization(ok)).status, ok.slice(0, 9)).toBe(200);
    for (const bad of [`Bearer ${token} more`, `Basic Bearer ${token}`]) {
      const res = await withAuthorization(bad);
      expect(res.status, bad.slice(0, 14)).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    }
  });
});

describe('SigV4 at the MCP endpoint, as S3 takes it', () => {
  it('a signed path with a query string', async () => {
    const res = await raw(casket.url, casket.agents.sig!, { method: 'POST', path: '/_casket/mcp?client=wire', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: readSmall });
    expect(res.status, res.body).toBe(200);
    expect(JSON.parse(res.body).result.structuredContent.content).toBe('small\n');
  });

  it('an UNSIGNED-PAYLOAD body (the signature covers no hash of it); a forged hash is refused, saying so', async () => {
    const unsigned = await raw(casket.url, casket.agents.sig!, { method: 'POST', path: '/_casket/mcp', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: readSmall, payloadHash: 'UNSIGNED-PAYLOAD' });
    expect(unsigned.status, unsigned.body).toBe(200);
    const forged = await raw(casket.url, casket.agents.sig!, { method: 'POST', path: '/_casket/mcp', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: readSmall, payloadHash: '0'.repeat(64) });
    expect(forged.status).toBe(401);
    expect(JSON.parse(forged.body).error.message).toContain('does not match the signed x-amz-content-sha256');
  });

  it('a session minted by casket\'s STS AssumeRole: its tool calls read and write as the session', async () => {
    const sts = new STSClient({ endpoint: casket.url, region: 'us-east-1', credentials: casket.admin, maxAttempts: 1 });
    const { Credentials: c } = await sts.send(new AssumeRoleCommand({ RoleArn: 'arn:casket:iam::agent/sig', RoleSessionName: 'mcp', DurationSeconds: 900 }));
    sts.destroy();
    const session = { accessKeyId: c!.AccessKeyId!, secretAccessKey: c!.SecretAccessKey!, sessionToken: c!.SessionToken! };
    const write = rpc(2, 'tools/call', { name: 'write_file', arguments: { path: `${bucket}/by-session.txt`, content: 'session\n', create_only: true } });
    const res = await raw(casket.url, session, { method: 'POST', path: '/_casket/mcp', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: write });
    expect(res.status, res.body).toBe(200);
    const result = JSON.parse(res.body).result;
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    expect(missing(result, ['etag'])).toEqual([]);
  });
});

describe('what the door lets a tool do', () => {
  it('a person\'s key acting as an agent writes as that agent', async () => {
    const client = await httpClient(casket, mintToken(casket.keys.person!, { agent: 'rita' }), 'rita');
    const made = await call(client, 'write_file', { path: `${bucket}/rita.txt`, content: 'by rita\n', create_only: true });
    expect(made.isError).toBeFalsy();
    const info = await call(client, 'get_file_info', { path: `${bucket}/rita.txt` });
    // The JSON a client hands the model, or get_file_info's text lines.
    expect(missing(info, [['"last_writer":"rita"', 'last_writer: rita']])).toEqual([]);
    await client.close();
  });

  it('a file past --mcp-max-file-bytes is refused, naming the limit; one under it is read', async () => {
    const client = await httpClient(casket, mintToken(casket.agents.sig!), 'sig');
    const big = await call(client, 'read_text_file', { path: `${bucket}/big.txt` });
    expect(big.isError).toBe(true);
    expect(missing(big, [`EntityTooLarge: The object is larger than ${LIMIT} bytes`])).toEqual([]);
    // Shown none of it, the agent has not read it whole: a write is not entitled by this read.
    const after = await call(client, 'get_file_info', { path: `${bucket}/big.txt` });
    expect(missing(after, [['your_read: partial', '"your_read":"partial"']])).toEqual([]);
    const small = await call(client, 'read_text_file', { path: `${bucket}/small.txt` });
    expect(data(small).content).toBe('small\n');
    await client.close();
  });

  it('a reminder whose diff casket cut at --diff-max-bytes says so, and where the rest is', async () => {
    const client = await httpClient(casket, mintToken(casket.agents.sig!), 'sig');
    const before = Array.from({ length: 8 }, (_, i) => `line ${i}\n`).join('');
    const admin = sdk(casket.url, casket.admin);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'long.txt', Body: before }));
    await call(client, 'read_text_file', { path: `${bucket}/long.txt` });
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'long.txt', Body: before.toUpperCase() }));
    admin.destroy();
    const next = await call(client, 'get_file_info', { path: `${bucket}/small.txt` });
    expect(missing(next, ['long.txt', 'what_changed {} for the whole diff'])).toEqual([]);
    await client.close();
  });

  it('what_changed is for agents: a person\'s key that acts as none is told so', async () => {
    const client = await httpClient(casket, mintToken(casket.keys.person!), 'person');
    const r = await call(client, 'what_changed', {});
    expect(r.isError).toBe(true);
    expect(missing(r, ['what_changed is for agents'])).toEqual([]);
    // The error code, in the JSON the clients that show only structuredContent hand the model.
    expect(viewsOf(r).structuredOnly!.text).toContain('"error":"InvalidRequest"');
    await client.close();
  });

  it('logs a tool\'s S3 requests as the wire\'s: a read and a refusal whole, a read cut at the limit as aborted', async () => {
    const client = await httpClient(casket, mintToken(casket.agents.sig!), 'sig');
    for (const key of ['small.txt', 'absent.txt', 'big.txt']) await call(client, 'read_text_file', { path: `${bucket}/${key}` });
    await client.close();
    interface Line { msg?: string; operation?: string; bucket?: string; key?: string; status?: number; aborted?: boolean }
    const reads = (key: string) => casket.logs.filter((l) => l.includes('"request"')).map((l) => JSON.parse(l) as Line).filter((e) => e.msg === 'request' && e.operation === 'GetObject' && e.bucket === bucket && e.key === key);
    await until(() => ['small.txt', 'absent.txt', 'big.txt'].every((k) => reads(k).length > 0), 'the reads\' log lines');
    expect(reads('small.txt').map((e) => [e.status, e.aborted])).toContainEqual([200, undefined]);
    expect(reads('small.txt').every((e) => e.aborted === undefined)).toBe(true);
    expect(reads('absent.txt').map((e) => [e.status, e.aborted])).toEqual([[404, undefined]]);
    expect(reads('big.txt').every((e) => e.status === 200 && e.aborted === true)).toBe(true);
  });
});

describe('what_changed through the door', () => {
  it('a cursor casket did not give is refused, saying what since takes', async () => {
    const client = await httpClient(casket, mintToken(casket.agents.sig!), 'sig');
    const r = await call(client, 'what_changed', { since: 'yesterday' });
    expect(r.isError).toBe(true);
    expect(missing(r, ['since must be a cursor from an earlier answer'])).toEqual([]);
    await client.close();
  });

  it('a change from a version casket did not keep is named, without a diff', async () => {
    const client = await httpClient(casket, mintToken(casket.agents.sig!), 'sig');
    const admin = sdk(casket.url, casket.admin);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'wide.txt', Body: 'a'.repeat(RETAIN_LIMIT + 1) }));
    expect(data(await call(client, 'read_text_file', { path: `${bucket}/wide.txt` })).content).toHaveLength(RETAIN_LIMIT + 1);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'wide.txt', Body: 'b'.repeat(RETAIN_LIMIT + 1) }));
    admin.destroy();
    const r = await call(client, 'what_changed', {});
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    expect(missing(r, [`${bucket}/wide.txt`])).toEqual([]);
    const change = (data(r).changes as Array<{ path: string; diff?: string }>).find((c) => c.path === `${bucket}/wide.txt`);
    expect(change).toBeDefined();
    expect(change!.diff).toBeUndefined();
    await client.close();
  });

  it('a key of the agent that may not read a changed file is told of the change, not shown its diff', async () => {
    const admin = sdk(casket.url, casket.admin);
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'closed.txt', Body: 'kept from narrow\n' }));
    const sig = await httpClient(casket, mintToken(casket.agents.sig!), 'sig');
    await call(sig, 'read_text_file', { path: `${bucket}/closed.txt` });
    await sig.close();
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'closed.txt', Body: 'still kept from narrow\n' }));
    admin.destroy();
    const narrow = await httpClient(casket, mintToken(casket.keys.narrow!), 'narrow');
    const r = await call(narrow, 'what_changed', {});
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    expect(missing(r, [`${bucket}/closed.txt`])).toEqual([]);
    expect(JSON.stringify(r)).not.toContain('kept from narrow');
    await narrow.close();
  });

  it('a person\'s key acting as an agent gets that agent\'s changes to the files its own policy lets it read', async () => {
    // Agent pat read two files: one through the person's key (full rights), one through the limited key.
    const wide = await httpClient(casket, mintToken(casket.keys.person!, { agent: 'pat' }), 'person-as-pat');
    const admin = sdk(casket.url, casket.admin);
    for (const key of ['pat-shut.txt', 'open/pat-seen.txt']) await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `before ${key}\n` }));
    expect(data(await call(wide, 'read_text_file', { path: `${bucket}/pat-shut.txt` })).content).toBe('before pat-shut.txt\n');
    const limited = await httpClient(casket, mintToken(casket.keys.limited!, { agent: 'pat' }), 'limited-as-pat');
    expect(data(await call(limited, 'read_text_file', { path: `${bucket}/open/pat-seen.txt` })).content).toBe('before open/pat-seen.txt\n');
    for (const key of ['pat-shut.txt', 'open/pat-seen.txt']) await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `after ${key}\n` }));
    admin.destroy();
    const mine = await call(limited, 'what_changed', {});
    expect(mine.isError, JSON.stringify(mine.content)).toBeFalsy();
    expect(missing(mine, [`${bucket}/open/pat-seen.txt`])).toEqual([]);
    expect(JSON.stringify(mine), JSON.stringify(mine)).not.toContain('pat-shut.txt');
    const all = await call(wide, 'what_changed', {});
    expect(missing(all, [`${bucket}/open/pat-seen.txt`, `${bucket}/pat-shut.txt`])).toEqual([]);
    await Promise.all([wide.close(), limited.close()]);
  });
});
