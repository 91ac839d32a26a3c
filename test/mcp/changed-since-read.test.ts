/**
 * "Changed since you read" (docs/design.md §12): an agent that read a file
 * whole is told in its next answer — of any tool — that someone else changed
 * it, with who, the new etag and the diff, in both views (structuredContent
 * and text); once per change; never for its own writes; not after it read the
 * new version. Real casket processes, the SDK's Client over Streamable HTTP.
 */
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, text, type McpCasket, type ToolResult } from '../helpers/mcp.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

const bucket = 'team';
const PLAN = '# plan\nstep one: draft\nstep two: review\n';

interface Reminder {
  path: string;
  etag: string;
  changed_by: string;
  changed_at: string;
  diff: string;
  diff_truncated: boolean;
  next: string;
}
const reminders = (r: ToolResult) => (data(r).changed_since_read ?? []) as Reminder[];

describe('changed since you read, over MCP', () => {
  let casket: McpCasket;
  let a: Client;
  let b: Client;

  beforeAll(async () => {
    casket = await startMcpCasket({ agents: ['ann', 'ben'] });
    await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
    a = await httpClient(casket, mintToken(casket.agents.ann!, { agent: 'ann' }), 'ann');
    b = await httpClient(casket, mintToken(casket.agents.ben!, { agent: 'ben' }), 'ben');
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await casket?.stop();
  });

  it("tells A in its next answer of any tool, once, that B changed plan.md, with B's line; not after A reads it again; never B of its own write", async () => {
    await sdk(casket.url, casket.admin).send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: PLAN }));
    const readA = await call(a, 'read_text_file', { path: `${bucket}/plan.md` });
    expect(reminders(readA)).toEqual([]);
    const readB = await call(b, 'read_text_file', { path: `${bucket}/plan.md` });
    const edit = await call(b, 'edit_file', { path: `${bucket}/plan.md`, expected_etag: data(readB).etag, edits: [{ oldText: 'step two: review', newText: 'step two: ship it friday' }] });
    expect(edit.isError, text(edit)).toBeFalsy();
    // B's own write: no reminder to B, in this answer or the next.
    expect(reminders(edit)).toEqual([]);
    expect(text(edit)).not.toContain('Changed since you read');

    const next = await call(a, 'list_directory', { path: bucket });
    const [r] = reminders(next);
    expect(reminders(next)).toHaveLength(1);
    expect(r).toMatchObject({ path: `${bucket}/plan.md`, changed_by: 'ben', etag: String(data(edit).etag), diff_truncated: false });
    expect(r!.diff).toContain('-step two: review');
    expect(r!.diff).toContain('+step two: ship it friday');
    expect(Date.parse(r!.changed_at)).not.toBeNaN();
    // The text view holds the same: path, who, the changed line, the new etag.
    const t = text(next);
    expect(t).toContain(`${bucket}/plan.md`);
    expect(t).toContain('ben');
    expect(t).toContain('+step two: ship it friday');
    expect(t).toContain(String(data(edit).etag));
    // The tool's own answer is still there.
    expect(t).toContain('[FILE] plan.md');

    // Once per change.
    const again = await call(a, 'get_file_info', { path: `${bucket}/plan.md` });
    expect(reminders(again)).toEqual([]);
    expect(text(again)).not.toContain('Changed since you read');
    expect(reminders(await call(b, 'list_directory', { path: bucket }))).toEqual([]);

    // Again when it changes again; and on an error answer, in its text.
    const readB2 = await call(b, 'read_text_file', { path: `${bucket}/plan.md` });
    await call(b, 'edit_file', { path: `${bucket}/plan.md`, expected_etag: data(readB2).etag, edits: [{ oldText: 'step one: draft', newText: 'step one: outline' }] });
    const refused = await call(a, 'read_text_file', { path: `${bucket}/no-such-file.md` });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('+step one: outline');
    expect(reminders(refused)[0]).toMatchObject({ path: `${bucket}/plan.md`, changed_by: 'ben' });

    // A reads the new version: nothing more about it.
    const reread = await call(a, 'read_text_file', { path: `${bucket}/plan.md` });
    expect(reminders(reread)).toEqual([]);
    expect(reminders(await call(a, 'list_directory', { path: bucket }))).toEqual([]);
  });
});

const haveRedis = need('redis-server', hasRedis());

describe.runIf(haveRedis)('changed since you read, two caskets on one Redis', () => {
  let redis: RunningRedis;
  let upstream: Upstream;
  let one: RunningCasket;
  let two: RunningCasket;
  let a: Client;
  let b: Client;

  beforeAll(async () => {
    redis = await startRedis();
    upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
    const args = ['--state', 'redis', '--redis-url', redis.url];
    one = await startCasket({ agents: ['ann', 'ben'], upstream, args });
    two = await startCasket({ credentialsOf: one, upstream, args });
    await sdk(one.url, one.admin).send(new CreateBucketCommand({ Bucket: bucket }));
    a = await httpClient(one, mintToken(one.agents.ann!, { agent: 'ann' }), 'ann');
    b = await httpClient(two, mintToken(one.agents.ben!, { agent: 'ben' }), 'ben');
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await one?.stop();
    await two?.stop();
    await upstream?.stop();
    await redis?.stop();
  });

  it('A reads on one casket, B writes on the other: A’s next call on the first carries the reminder, once', async () => {
    await sdk(one.url, one.admin).send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: PLAN }));
    await call(a, 'read_text_file', { path: `${bucket}/plan.md` });
    const readB = await call(b, 'read_text_file', { path: `${bucket}/plan.md` });
    const edit = await call(b, 'edit_file', { path: `${bucket}/plan.md`, expected_etag: data(readB).etag, edits: [{ oldText: 'step two: review', newText: 'step two: redis' }] });
    expect(edit.isError, text(edit)).toBeFalsy();
    const next = await call(a, 'list_directory', { path: bucket });
    expect(reminders(next)).toHaveLength(1);
    expect(reminders(next)[0]).toMatchObject({ path: `${bucket}/plan.md`, changed_by: 'ben', etag: String(data(edit).etag) });
    expect(text(next)).toContain('+step two: redis');
    expect(reminders(await call(a, 'list_directory', { path: bucket }))).toEqual([]);
  });
});

describe('changed since you read, over S3: x-casket-changed-since-read', () => {
  let casket: McpCasket;
  const HEADER = 'x-casket-changed-since-read';

  /** An S3 client of `agent` that asks for the header (or not) and keeps the last answer's value. */
  function s3Agent(cred: Cred, ask: boolean) {
    const client = sdk(casket.url, cred);
    const seen = { value: undefined as string | undefined };
    if (ask) client.middlewareStack.add((next) => async (args) => ((args.request as { headers: Record<string, string> }).headers[HEADER] = 'on', next(args)), { step: 'build', name: 'askChangedSinceRead' });
    client.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        seen.value = (out.response as { headers: Record<string, string> }).headers[HEADER];
        return out;
      },
      { step: 'deserialize', name: 'keepChangedSinceRead' },
    );
    return { client, seen };
  }

  beforeAll(async () => {
    casket = await startMcpCasket({ agents: ['ann', 'ben'] });
    await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(async () => {
    await casket?.stop();
  });

  it('names the changed key, URL-encoded, once, to an agent that asks; a request that does not ask neither gets nor uses it up', async () => {
    const key = 'notes/plan v2.md';
    await sdk(casket.url, casket.admin).send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: PLAN }));
    const ann = s3Agent(casket.agents.ann!, true);
    const annQuiet = s3Agent(casket.agents.ann!, false);
    const ben = s3Agent(casket.agents.ben!, true);
    await bytes((await ann.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body);
    expect(ann.seen.value).toBeUndefined();
    const read = await ben.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    await bytes(read.Body);
    await ben.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `${PLAN}step three: s3\n`, IfMatch: read.ETag }));
    expect(ben.seen.value).toBeUndefined();

    await annQuiet.client.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(annQuiet.seen.value).toBeUndefined();
    await ann.client.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(ann.seen.value).toBe(`${bucket}/notes/plan%20v2.md`);
    await ann.client.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(ann.seen.value).toBeUndefined();
    // Ben's own write never names itself to Ben.
    await ben.client.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(ben.seen.value).toBeUndefined();
  });
});
