/**
 * Every S3 request of an MCP tool call runs as the caller of that call's own
 * HTTP request, for the handler's whole life (issue 37, finding 1): two
 * callers with different policies — an agent key allowed only `pub/*` and
 * the admin — call tools at the same time, and casket's request log must
 * attribute each write to the key whose call made it. With a JSON-RPC batch
 * whose two requests share an id (the transport answered when the first was
 * done, the pooled server was lent to the next caller while the other still
 * ran), and with plain concurrent calls.
 */
import { CreateBucketCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';

const bucket = 'files';
let casket: McpCasket;
let admin: S3Client;
let agentToken: string;
let adminToken: string;

beforeAll(async () => {
  casket = await startMcpCasket({
    keys: {
      pubOnly: {
        agent: 'patcher',
        policy: {
          Statement: [
            { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], Resource: `arn:aws:s3:::${bucket}/pub/*` },
            { Effect: 'Allow', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${bucket}` },
          ],
        },
      },
    },
  });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'pub/seed.txt', Body: 'seed\n' }));
  agentToken = mintToken(casket.keys.pubOnly!, { agent: 'patcher' });
  adminToken = mintToken(casket.admin);
});
afterAll(async () => {
  admin?.destroy();
  await casket?.stop();
});

async function post(token: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(new URL('/_casket/mcp', casket.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** A patch creating `count` files under pub/<dir>/ and, last, secret/<dir>.txt, which the agent key may not write. */
function patch(dir: string, count: number): { text: string; keys: string[] } {
  const keys = [...Array.from({ length: count }, (_, i) => `pub/${dir}/f${i}.txt`), `secret/${dir}.txt`];
  return { text: keys.map((k) => `--- /dev/null\n+++ b/${bucket}/${k}\n@@ -0,0 +1 @@\n+${k}\n`).join(''), keys };
}

/** Successful writes casket logged for these keys: key → the access keys that wrote it. */
function writers(keys: readonly string[]): Map<string, string[]> {
  const wanted = new Set(keys);
  const out = new Map<string, string[]>();
  for (const line of casket.logs) {
    if (!line.includes('"request"')) continue;
    const e = JSON.parse(line) as { msg?: string; operation?: string; key?: string; accessKey?: string; status?: number };
    if (e.msg !== 'request' || e.operation !== 'PutObject' || e.key === undefined || !wanted.has(e.key) || e.status !== 200) continue;
    out.set(e.key, [...(out.get(e.key) ?? []), e.accessKey ?? '']);
  }
  return out;
}

async function exists(key: string): Promise<boolean> {
  return admin.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
    () => true,
    (e: { $metadata?: { httpStatusCode?: number } }) => {
      if (e.$metadata?.httpStatusCode === 404) return false;
      throw e;
    },
  );
}

/** The admin calling tools in `loops` loops until `stop` resolves; answers how many calls it made and what it wrote. */
async function adminBusy(stop: Promise<unknown>, dir: string, loops: number): Promise<{ calls: number; wrote: string[] }> {
  let done = false;
  void stop.finally(() => (done = true));
  let calls = 0;
  const wrote: string[] = [];
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      for (let i = 0; !done; i++) {
        const key = `admin/${dir}/${loop}-${i}.txt`;
        const r = i % 4 === 3 ? await post(adminToken, toolCall(1, 'write_file', { path: `${bucket}/${key}`, content: 'admin\n', create_only: true })) : await post(adminToken, toolCall(1, 'get_file_info', { path: `${bucket}/pub/seed.txt` }));
        expect(r.status).toBe(200);
        if (i % 4 === 3) wrote.push(key);
        calls++;
      }
    }),
  );
  return { calls, wrote };
}

describe('an MCP tool call acts only as the caller of its own request', () => {
  it('a batch whose ping and apply_patch share an id is refused whole, and nothing is written as the next caller', async () => {
    const p = patch('dup', 150);
    const agentKey = casket.keys.pubOnly!.accessKeyId;
    const sent = post(agentToken, [{ jsonrpc: '2.0', id: 7, method: 'ping' }, toolCall(7, 'apply_patch', { patch: p.text })]);
    // The patch's handler, if it runs, is done when its last file is written or refused; the admin keeps calling until then.
    // (A refused batch ran nothing: there is nothing to wait for.)
    const patched = sent.then((a) =>
      a.status === 400 ? undefined : until(async () => writers(p.keys).size >= p.keys.length - 1 || (await exists(`secret/dup.txt`)), 'the patch to finish').catch(() => undefined),
    );
    // The admin's calls follow the agent's answer, as the next requests to a busy endpoint do.
    const [answer, busy] = await Promise.all([sent, sent.then(() => adminBusy(patched, 'dup', 1))]);
    expect(busy.calls).toBeGreaterThan(0);
    const logged = writers(p.keys);
    for (const [key, by] of logged) expect({ key, by }).toEqual({ key, by: by.map(() => agentKey) });
    expect(await exists('secret/dup.txt')).toBe(false);
    // JSON-RPC 2.0 / MCP: ids are unique; the batch is an Invalid Request and none of it ran.
    expect(answer.status).toBe(400);
    expect(answer.json.error.code).toBe(-32600);
    expect(logged.size).toBe(0);
  }, 30_000);

  it('concurrent tool calls of an agent limited to pub/ and the admin: every write is its own caller\'s, and a patch touching secret/ is refused whole', async () => {
    const p = patch('plain', 150);
    const agentKey = casket.keys.pubOnly!.accessKeyId;
    // A patch is one changeset (src/changesets/): the secret/ file it may not write refuses all of it.
    const denied = await post(agentToken, toolCall(8, 'apply_patch', { patch: p.text }));
    expect(denied.status).toBe(200);
    expect(JSON.stringify(denied.json.result)).toMatch(/AccessDenied|may not/);
    expect(await exists('secret/plain.txt')).toBe(false);
    expect(await exists('pub/plain/f0.txt')).toBe(false);
    const pub = p.keys.filter((k) => k.startsWith('pub/'));
    const sent = post(agentToken, toolCall(9, 'apply_patch', { patch: p.text.slice(0, p.text.indexOf('--- /dev/null\n+++ b/' + bucket + '/secret/')) }));
    const [answer, busy] = await Promise.all([sent, adminBusy(sent, 'plain', 3)]);
    expect(answer.status).toBe(200);
    expect(busy.calls).toBeGreaterThan(0);
    expect((answer.json.result as { isError?: boolean }).isError, JSON.stringify(answer.json.result).slice(0, 500)).toBeFalsy();
    // The write log names the access key of each write: the agent's 150, the admin's own.
    const log = JSON.parse((await raw(casket.url, casket.admin, { method: 'GET', path: `/_casket/writes?bucket=${bucket}&limit=10000` })).body) as { writes: Array<{ key: string; accessKey?: string }> };
    const by = new Map<string, string[]>();
    for (const w of log.writes) by.set(w.key, [...(by.get(w.key) ?? []), w.accessKey ?? '']);
    for (const key of pub) expect({ key, by: by.get(key) }).toEqual({ key, by: [agentKey] });
    for (const key of busy.wrote) expect({ key, by: by.get(key) }).toEqual({ key, by: [casket.admin.accessKeyId] });
  }, 30_000);

  it('a call that names another caller in its own message still acts as its request\'s: nothing in JSON-RPC reaches authInfo', async () => {
    const forged = { token: adminToken, clientId: 'admin', scopes: [], extra: { casketCaller: { accessKeyId: casket.admin.accessKeyId } } };
    const call = (id: number, params: Record<string, unknown>) => post(agentToken, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'write_file', arguments: { path: `${bucket}/secret/forged-${id}.txt`, content: 'x\n', create_only: true }, ...params } });
    for (const [id, params] of [[21, { authInfo: forged }], [22, { _meta: { authInfo: forged, casketCaller: forged.extra.casketCaller } }]] as const) {
      const answer = await call(id, params);
      expect(answer.status).toBe(200);
      expect(answer.json.result.isError).toBe(true);
      expect(answer.json.result.structuredContent.error).toBe('AccessDenied');
      expect(await exists(`secret/forged-${id}.txt`)).toBe(false);
    }
  });
});
