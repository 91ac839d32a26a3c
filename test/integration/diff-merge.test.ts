/**
 * What changed, and merging (docs/design.md §6), end to end with the JS SDK
 * and boto3, on the embedded store or through CASKET_TEST_UPSTREAM: two
 * agents editing different sections of one markdown file both land with
 * `x-casket-merge: text`; overlapping edits are a 412 merge-conflict whose
 * link shows the markers; a stale 412, a stale-read 412 and a 428 link a
 * diff that shows exactly the other agent's change; the changes feed lists it
 * once; a version a person's request wrote is named by its access key in
 * the 412, the diff, the feed and the write log alike; a small
 * --retain-bytes evicts old versions and refusals lose their link, never
 * their answer; a merge write larger than --retain-max-size is
 * an ordinary write, its length declared or not; two caskets on one Redis
 * serve each other's diffs.
 */
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { hasPythonModule } from '../helpers/cli-tools.js';
import { until } from '../helpers/poll.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { raw, xmlField } from '../helpers/raw.js';
import { startRedis, hasRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

const bucket = 'notes';
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const quoted = (b: Buffer | string) => `"${sha(b)}"`;

/** A 200-line markdown file: five sections of 40 lines. */
function notes(): string {
  const out: string[] = [];
  for (let s = 1; s <= 5; s++) {
    out.push(`## Section ${s}`);
    for (let l = 1; l < 40; l++) out.push(`- item ${s}.${l}: something to remember about topic ${s}`);
  }
  return out.join('\n') + '\n';
}
const edit = (text: string, from: string, to: string) => {
  expect(text).toContain(from);
  return text.replace(from, to);
};

/** An SDK client for an agent whose requests may carry extra signed headers, and that records the last response's headers. */
function agentClient(url: string, cred: Cred) {
  const client = sdk(url, cred);
  const state: { extra: Record<string, string>; headers: Record<string, string> } = { extra: {}, headers: {} };
  client.middlewareStack.add(
    (next) => async (args) => {
      Object.assign((args.request as { headers: Record<string, string> }).headers, state.extra);
      return next(args);
    },
    { step: 'build', name: 'extraHeaders' },
  );
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        const out = await next(args);
        state.headers = (out.response as { headers: Record<string, string> }).headers;
        return out;
      } catch (e) {
        state.headers = ((e as { $response?: { headers: Record<string, string> } }).$response?.headers) ?? {};
        throw e;
      }
    },
    { step: 'deserialize', name: 'lastHeaders', priority: 'low' },
  );
  return {
    client,
    state,
    async read(key: string): Promise<{ etag: string; text: string }> {
      const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return { etag: r.ETag!, text: (await bytes(r.Body)).toString('utf8') };
    },
    async write(key: string, body: string, ifMatch: string, merge = false) {
      state.extra = merge ? { 'x-casket-merge': 'text' } : {};
      try {
        return await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, IfMatch: ifMatch }));
      } finally {
        state.extra = {};
      }
    },
  };
}

/** GET a casket path (diff, merge, feed) signed with `cred`. */
async function fetchSigned(url: string, cred: Cred, path: string) {
  const r = await raw(url, cred, { method: 'GET', path });
  return r;
}

/**
 * casket keeps a version an agent read after the response, in the
 * background: wait until `content`, no longer current, is kept (a diff from
 * it is served; the current version is always served, from the store)
 * before a write that needs it, so a loaded machine cannot race the test.
 */
async function keptAt(casket: RunningCasket, key: string, content: string) {
  const path = `/_casket/diff?bucket=${bucket}&key=${key}&from=${sha(content)}&to=current`;
  await until(async () => (await fetchSigned(casket.url, casket.admin, path)).status === 200, `version ${sha(content)} of ${key} kept`);
}

/**
 * GET a merge-conflict's <Merge> link: casket keeps both sides it names
 * before it answers the 412, so the link is served at once (README tells
 * agents to follow it straight away).
 */
async function fetchMergeLink(url: string, cred: Cred, link: string) {
  return fetchSigned(url, cred, link);
}

/** Changed lines of a unified diff (no header lines). */
function changedLines(diff: string): string[] {
  return diff.split('\n').filter((l) => (l.startsWith('+') || l.startsWith('-')) && !l.startsWith('+++') && !l.startsWith('---'));
}

/** boto3 in one python process per agent (importing it costs a second or more): one JSON request per line, one JSON reply per line. */
const BOTO3 = `
import json, sys, boto3
from botocore.config import Config
from botocore.exceptions import ClientError
a = json.loads(sys.argv[1])
s3 = boto3.client('s3', endpoint_url=a['endpoint'], aws_access_key_id=a['access_key'], aws_secret_access_key=a['secret_key'], region_name='us-east-1',
                  config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1, 'mode': 'standard'}))
merging = [False]
def merge(request, **_):
    if merging[0]:
        request.headers['x-casket-merge'] = 'text'
s3.meta.events.register('before-sign.s3.PutObject', merge)
for line in sys.stdin:
    r = json.loads(line)
    merging[0] = bool(r.get('merge'))
    try:
        if r['op'] == 'get':
            g = s3.get_object(Bucket=r['bucket'], Key=r['key'])
            out = {'etag': g['ETag'], 'text': g['Body'].read().decode()}
        else:
            p = s3.put_object(Bucket=r['bucket'], Key=r['key'], Body=r['body'].encode(), IfMatch=r['if_match'])
            out = {'etag': p['ETag'], 'merged': p['ResponseMetadata']['HTTPHeaders'].get('x-casket-merged')}
    except ClientError as e:
        err = e.response['Error']
        out = {'status': e.response['ResponseMetadata']['HTTPStatusCode'], 'code': err.get('Code'), 'reason': err.get('Reason'), 'merge': err.get('Merge'),
               'diff': err.get('Diff'), 'message': err.get('Message'), 'headers': e.response['ResponseMetadata']['HTTPHeaders']}
    print(json.dumps(out), flush=True)
`;

function boto3(url: string, cred: Cred) {
  const proc = spawn('python3', ['-c', BOTO3, JSON.stringify({ endpoint: url, access_key: cred.accessKeyId, secret_key: cred.secretAccessKey })], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  return {
    async call(args: Record<string, unknown>): Promise<any> {
      proc.stdin!.write(`${JSON.stringify({ bucket, ...args })}\n`);
      const next = await lines.next();
      if (next.done) throw new Error('boto3 driver exited');
      return JSON.parse(next.value);
    },
    close: () => new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.stdin!.end();
    }),
  };
}

const haveBoto3 = need('boto3 (python3)', hasPythonModule('boto3'));

describe('one casket', () => {
  let casket: RunningCasket;
  let admin: S3Client;
  let alice: ReturnType<typeof agentClient>;
  let bob: ReturnType<typeof agentClient>;

  beforeAll(async () => {
    casket = await startCasket({ agents: ['alice', 'bob'] });
    admin = sdk(casket.url, casket.admin);
    alice = agentClient(casket.url, casket.agents.alice!);
    bob = agentClient(casket.url, casket.agents.bob!);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(async () => {
    for (const c of [admin, alice?.client, bob?.client]) c?.destroy();
    await casket?.stop();
  });

  it('JS SDK: two agents edit different sections from one base; both land with x-casket-merge: text', async () => {
    const base = notes();
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'sdk.md', Body: base }));
    const a = await alice.read('sdk.md');
    const b = await bob.read('sdk.md');
    expect(a.etag).toBe(quoted(base));
    const aliceText = edit(a.text, '- item 1.3: something to remember about topic 1', '- item 1.3: ALICE rewrote this');
    const bobText = edit(b.text, '- item 4.20: something to remember about topic 4', '- item 4.20: BOB rewrote this');
    const first = await alice.write('sdk.md', aliceText, a.etag, true);
    expect(first.ETag).toBe(quoted(aliceText));
    expect(alice.state.headers['x-casket-merged']).toBeUndefined();
    const second = await bob.write('sdk.md', bobText, b.etag, true);
    const both = edit(aliceText, '- item 4.20: something to remember about topic 4', '- item 4.20: BOB rewrote this');
    expect(second.ETag).toBe(quoted(both));
    expect(bob.state.headers['x-casket-merged']).toBe(quoted(aliceText));
    const final = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: 'sdk.md' }));
    expect((await bytes(final.Body)).toString('utf8')).toBe(both);
    // Bob's stamp is the merged version: he may write on it without reading again.
    const next = edit(both, '## Section 5', '## Section 5 (reviewed)');
    expect((await bob.write('sdk.md', next, second.ETag!)).ETag).toBe(quoted(next));
  });

  it('JS SDK: without the header nothing is merged', async () => {
    const base = notes();
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'plain.md', Body: base }));
    const a = await alice.read('plain.md');
    const b = await bob.read('plain.md');
    await alice.write('plain.md', edit(a.text, 'topic 1\n', 'topic one\n'), a.etag);
    const f = await failure(bob.write('plain.md', edit(b.text, 'item 5.2:', 'item five.2:'), b.etag));
    expect(f.status).toBe(412);
    expect(f.error.Reason).toBe('precondition-failed');
  });

  it('JS SDK: a stale 412 links a diff showing exactly the other agent\'s change; the feed lists it once', async () => {
    const base = notes();
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'stale.md', Body: base }));
    const a = await alice.read('stale.md');
    const b = await bob.read('stale.md');
    const before = await fetchSigned(casket.url, casket.admin, '/_casket/agents/bob/changes');
    expect(before.status).toBe(200);
    const cursor = JSON.parse(before.body).cursor as string;
    const aliceText = edit(a.text, '- item 2.7: something to remember about topic 2', '- item 2.7: changed by alice');
    const written = await alice.write('stale.md', aliceText, a.etag);

    const f = await failure(bob.write('stale.md', edit(b.text, 'item 3.1:', 'item 3.1 by bob:'), b.etag));
    expect(f.status).toBe(412);
    const link = f.error.Diff as string;
    // Canonical (sorted) query: signers that sign the query as given (curl --aws-sigv4) sign it right.
    expect(link).toBe(`/_casket/diff?bucket=${bucket}&from=${sha(base)}&key=stale.md&to=${sha(aliceText)}`);
    expect(bob.state.headers['x-casket-diff']).toBe(link);
    expect(f.error.message).toContain(`GET ${link}`);
    const diff = await fetchSigned(casket.url, casket.agents.bob!, link);
    expect(diff.status).toBe(200);
    expect(diff.headers['content-type']).toMatch(/^text\/x-diff/);
    expect(changedLines(diff.body)).toEqual(['-- item 2.7: something to remember about topic 2', '+- item 2.7: changed by alice']);
    expect(diff.body).toContain(`+++ b/${bucket}/stale.md\t${written.ETag} (written by agent "alice")`);
    expect(diff.body).toContain(`--- a/${bucket}/stale.md\t"${sha(base)}"`);

    // The feed, with the agent's own key: the change once, then nothing past the cursor.
    const feed = await fetchSigned(casket.url, casket.agents.bob!, `/_casket/agents/bob/changes?since=${cursor}`);
    expect(feed.status).toBe(200);
    const page = JSON.parse(feed.body);
    const mine = page.changes.filter((c: { key: string }) => c.key === 'stale.md');
    expect(mine).toEqual([expect.objectContaining({ bucket, key: 'stale.md', writer: 'alice', readETag: `"${sha(base)}"`, currentETag: written.ETag, diff: link })]);
    const again = JSON.parse((await fetchSigned(casket.url, casket.agents.bob!, `/_casket/agents/bob/changes?since=${page.cursor}`)).body);
    expect(again.changes).toEqual([]);
    expect(again.cursor).toBe(page.cursor);
    // Another agent's key may not read bob's feed.
    expect((await fetchSigned(casket.url, casket.agents.alice!, '/_casket/agents/bob/changes')).status).toBe(403);
  });

  it("JS SDK: a person's write is named by its access key alike in the 412, the diff it links, the feed and the write log", async () => {
    const base = notes();
    await alice.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'person.md', Body: base, IfNoneMatch: '*' }));
    const b = await bob.read('person.md');
    // A person's request: the admin key, bound to no agent.
    const theirs = edit(base, '- item 2.2: something to remember about topic 2', '- item 2.2: a person fixed this');
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'person.md', Body: theirs }));
    await keptAt(casket, 'person.md', base);
    const key = casket.admin.accessKeyId;

    const f = await failure(bob.write('person.md', edit(b.text, 'item 3.1:', 'item 3.1 by bob:'), b.etag));
    expect(f.status).toBe(412);
    expect(bob.state.headers['x-casket-writer-access-key']).toBe(key);
    expect(bob.state.headers['x-casket-writer']).toBeUndefined();
    expect(f.error.LastWriterAccessKey).toBe(key);
    expect(f.error.message).toContain(`its current version is ${quoted(theirs)} (written by access key "${key}")`);

    const diff = await fetchSigned(casket.url, casket.agents.bob!, f.error.Diff as string);
    expect(diff.status).toBe(200);
    expect(diff.body).toContain(`--- a/${bucket}/person.md\t${quoted(base)} (written by agent "alice")`);
    expect(diff.body).toContain(`+++ b/${bucket}/person.md\t${quoted(theirs)} (written by access key "${key}")`);

    const feed = JSON.parse((await fetchSigned(casket.url, casket.agents.bob!, '/_casket/agents/bob/changes')).body);
    expect(feed.changes.filter((c: { key: string }) => c.key === 'person.md')).toEqual([expect.objectContaining({ writer: null, writerAccessKey: key, currentETag: quoted(theirs) })]);

    const log = JSON.parse((await fetchSigned(casket.url, casket.admin, `/_casket/writes?bucket=${bucket}&key=person.md`)).body);
    expect(log.writes[0]).toMatchObject({ accessKey: key, newETag: quoted(theirs) });
    expect(log.writes[0].agent).toBeUndefined();
    // The access key id, never its secret.
    expect(JSON.stringify([bob.state.headers, f.error.message, diff.body])).not.toContain(casket.admin.secretAccessKey);
  });

  const untilKept = (key: string, content: string) => keptAt(casket, key, content);

  /** bob read `base`, alice then wrote her change: what bob's refused write must link. */
  async function aliceChangedSinceBobRead(key: string) {
    const base = notes();
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: base }));
    const b = await bob.read(key);
    const a = await alice.read(key);
    const aliceText = edit(a.text, '- item 3.9: something to remember about topic 3', '- item 3.9: alice was here');
    const written = await alice.write(key, aliceText, a.etag);
    await untilKept(key, base);
    return { base, b, aliceText, written };
  }

  /** The refusal's link, in the header and the XML, is the diff base→alice's version and shows exactly her change. */
  async function expectDiffOfAlicesChange(f: Awaited<ReturnType<typeof failure>>, key: string, base: string, aliceText: string) {
    const link = f.error.Diff as string;
    expect(link).toBe(`/_casket/diff?bucket=${bucket}&from=${sha(base)}&key=${key}&to=${sha(aliceText)}`);
    expect(bob.state.headers['x-casket-diff']).toBe(link);
    const diff = await fetchSigned(casket.url, casket.agents.bob!, link);
    expect(diff.status).toBe(200);
    expect(changedLines(diff.body)).toEqual(['-- item 3.9: something to remember about topic 3', '+- item 3.9: alice was here']);
  }

  it('JS SDK: a 428 PreconditionRequired (no If-Match) links the diff of the other agent\'s change since bob read', async () => {
    const { base, b, aliceText } = await aliceChangedSinceBobRead('required.md');
    const f = await failure(bob.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'required.md', Body: edit(b.text, 'item 1.1:', 'item 1.1 by bob:') })));
    expect(f.status).toBe(428);
    expect(f.error.Reason).toBe('precondition-required');
    await expectDiffOfAlicesChange(f, 'required.md', base, aliceText);
  });

  it('JS SDK: a stale-read 412 (If-Match of a version bob never read) links the diff from the version he read', async () => {
    const { base, b, written, aliceText } = await aliceChangedSinceBobRead('stale-read.md');
    const f = await failure(bob.write('stale-read.md', edit(b.text, 'item 1.1:', 'item 1.1 by bob:'), written.ETag!));
    expect(f.status).toBe(412);
    expect(f.error.Reason).toBe('stale-read');
    await expectDiffOfAlicesChange(f, 'stale-read.md', base, aliceText);
  });

  it('JS SDK: overlapping edits with x-casket-merge: text are a 412 merge-conflict linking the merge with markers', async () => {
    const base = notes();
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'sdk-conflict.md', Body: base }));
    const a = await alice.read('sdk-conflict.md');
    const b = await bob.read('sdk-conflict.md');
    const aliceText = edit(a.text, 'item 2.12: something to remember about topic 2', 'item 2.12: ALICE via the SDK');
    await alice.write('sdk-conflict.md', aliceText, a.etag, true);
    await untilKept('sdk-conflict.md', base);
    const f = await failure(bob.write('sdk-conflict.md', edit(b.text, 'item 2.12: something to remember about topic 2', 'item 2.12: BOB via the SDK'), b.etag, true));
    expect(f.status).toBe(412);
    expect(f.error.Reason).toBe('merge-conflict');
    const link = f.error.Merge as string;
    expect(link).toMatch(/^\/_casket\/merge\?/);
    expect(bob.state.headers['x-casket-merge-conflict']).toBe(link);
    expect(f.error.message).toContain('conflict markers');
    const markers = await fetchMergeLink(casket.url, casket.agents.bob!, link);
    expect(markers.status, markers.body).toBe(200);
    expect(markers.body).toMatch(/<<<<<<< current "[0-9a-f]{64}" \(agent "alice"\)\n- item 2\.12: ALICE via the SDK\n=======\n- item 2\.12: BOB via the SDK\n>>>>>>> yours "[0-9a-f]{64}"\n/);
    // Nothing was written by the conflicting merge.
    const now = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: 'sdk-conflict.md' }));
    expect((await bytes(now.Body)).toString('utf8')).toBe(aliceText);
  });

  it('the feed long-polls until a change arrives', async () => {
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'poll.md', Body: notes() }));
    const b = await bob.read('poll.md');
    const now = JSON.parse((await fetchSigned(casket.url, casket.admin, '/_casket/agents/bob/changes')).body).cursor as string;
    const polled = fetchSigned(casket.url, casket.admin, `/_casket/agents/bob/changes?since=${now}&wait=30`);
    const a = await alice.read('poll.md');
    await alice.write('poll.md', edit(a.text, 'item 1.1:', 'item 1.1 (polled):'), a.etag);
    const page = JSON.parse((await polled).body);
    expect(page.changes.map((c: { key: string }) => c.key)).toEqual(['poll.md']);
    expect(page.changes[0].readETag).toBe(b.etag);
  });

  it.runIf(haveBoto3)('boto3: merge of different sections lands; overlapping edits are a 412 merge-conflict with markers', async () => {
    const base = notes();
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'boto.md', Body: base }));
    const bobCred = casket.agents.bob!;
    const aliceBoto = boto3(casket.url, casket.agents.alice!);
    const bobBoto = boto3(casket.url, bobCred);
    const py = (who: 'alice' | 'bob', args: Record<string, unknown>) => (who === 'alice' ? aliceBoto : bobBoto).call(args);
    const a = await py('alice', { op: 'get', key: 'boto.md' });
    const b = await py('bob', { op: 'get', key: 'boto.md' });
    expect(a.etag).toBe(quoted(base));
    const aliceText = edit(a.text, 'item 2.5: something', 'item 2.5: alice via boto3');
    const w1 = await py('alice', { op: 'put', key: 'boto.md', body: aliceText, if_match: a.etag, merge: true });
    expect(w1.etag).toBe(quoted(aliceText));
    const w2 = await py('bob', { op: 'put', key: 'boto.md', body: edit(b.text, 'item 5.30: something', 'item 5.30: bob via boto3'), if_match: b.etag, merge: true });
    const both = edit(aliceText, 'item 5.30: something', 'item 5.30: bob via boto3');
    expect(w2).toEqual({ etag: quoted(both), merged: quoted(aliceText) });

    // Overlap: both change item 3.3 from the merged version.
    const a2 = await py('alice', { op: 'get', key: 'boto.md' });
    const b2 = await py('bob', { op: 'get', key: 'boto.md' });
    const aliceOverlap = edit(a2.text, 'item 3.3: something to remember about topic 3', 'item 3.3: ALICE says so');
    await py('alice', { op: 'put', key: 'boto.md', body: aliceOverlap, if_match: a2.etag, merge: true });
    const conflict = await py('bob', { op: 'put', key: 'boto.md', body: edit(b2.text, 'item 3.3: something to remember about topic 3', 'item 3.3: BOB disagrees'), if_match: b2.etag, merge: true });
    expect(conflict).toMatchObject({ status: 412, code: 'PreconditionFailed', reason: 'merge-conflict' });
    expect(conflict.headers['x-casket-merge-conflict']).toBe(conflict.merge);
    expect(conflict.message).toContain('conflict markers');
    const markers = await fetchMergeLink(casket.url, bobCred, conflict.merge);
    expect(markers.status).toBe(200);
    expect(markers.body).toMatch(/<<<<<<< current "[0-9a-f]{64}" \(agent "alice"\)\n- item 3\.3: ALICE says so\n/);
    expect(markers.body).toMatch(/=======\n- item 3\.3: BOB disagrees\n>>>>>>> yours "[0-9a-f]{64}"\n/);
    // Nothing was written by the conflicting merge.
    const now = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: 'boto.md' }));
    expect((await bytes(now.Body)).toString('utf8')).toBe(aliceOverlap);
    await Promise.all([aliceBoto.close(), bobBoto.close()]);
  });

  it('retained versions never show in listings, and the budget figure is in the metrics', async () => {
    const listed = await admin.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect((listed.Contents ?? []).map((o) => o.Key).sort()).toEqual(['boto.md', 'person.md', 'plain.md', 'poll.md', 'required.md', 'sdk-conflict.md', 'sdk.md', 'stale-read.md', 'stale.md'].filter((k) => haveBoto3 || k !== 'boto.md'));
    const metrics = await (await fetch(`${casket.url}/_casket/metrics`)).text();
    const figure = Number(/^casket_retained_bytes (\d+)$/m.exec(metrics)?.[1]);
    expect(figure).toBeGreaterThan(notes().length);
    // One merge-conflict from the JS SDK, one from boto3.
    expect(metrics).toMatch(new RegExp(`^casket_refusals_total\\{reason="merge-conflict",enforced="true"\\} ${haveBoto3 ? 2 : 1}$`, 'm'));
  });
});

describe('a small --retain-bytes', () => {
  let casket: RunningCasket;
  let admin: S3Client;
  let bob: ReturnType<typeof agentClient>;
  let alice: ReturnType<typeof agentClient>;
  const budget = 3 * 1024;

  beforeAll(async () => {
    casket = await startCasket({ agents: ['alice', 'bob'], args: ['--retain-bytes', String(budget)] });
    admin = sdk(casket.url, casket.admin);
    alice = agentClient(casket.url, casket.agents.alice!);
    bob = agentClient(casket.url, casket.agents.bob!);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(async () => {
    for (const c of [admin, alice?.client, bob?.client]) c?.destroy();
    await casket?.stop();
  });

  it('evicts old versions: refusals degrade to no diff, never to an error', async () => {
    const doc = (n: number) => `# doc ${n}\n${'x'.repeat(1000)}\n`;
    for (let n = 0; n < 6; n++) await admin.send(new PutObjectCommand({ Bucket: bucket, Key: `doc${n}.md`, Body: doc(n) }));
    const seen: string[] = [];
    for (let n = 0; n < 6; n++) seen.push((await bob.read(`doc${n}.md`)).etag);
    // Each kept in the background after its response: wait for the last one to show in the figure.
    const figure = async () => Number(/^casket_retained_bytes (\d+)$/m.exec(await (await fetch(`${casket.url}/_casket/metrics`)).text())?.[1]);
    await until(async () => (await figure()) > 2000, 'the retained versions in the metrics');
    expect(await figure()).toBeLessThanOrEqual(budget);
    // doc0 was evicted, doc5 is kept: a person changes both; bob's stale writes are refused, with a link only for doc5.
    for (const n of [0, 5]) await admin.send(new PutObjectCommand({ Bucket: bucket, Key: `doc${n}.md`, Body: `${doc(n)}more\n` }));
    const old = await failure(bob.write('doc0.md', 'bob', seen[0]!));
    expect(old.status).toBe(412);
    expect(old.error.Diff).toBeUndefined();
    expect(bob.state.headers['x-casket-diff']).toBeUndefined();
    const fresh = await failure(bob.write('doc5.md', 'bob', seen[5]!));
    expect(fresh.status).toBe(412);
    const diff = await fetchSigned(casket.url, casket.agents.bob!, fresh.error.Diff as string);
    expect(changedLines(diff.body)).toEqual(['+more']);
    // A diff from an evicted version: 404 in JSON, not an error.
    const gone = await fetchSigned(casket.url, casket.agents.bob!, `/_casket/diff?bucket=${bucket}&key=doc0.md&from=${seen[0]!.slice(1, -1)}&to=current`);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.body).error).toBe('NoSuchVersion');
    const listed = await admin.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(listed.KeyCount).toBe(6);
  });
});

describe('a small --retain-max-size', () => {
  let casket: RunningCasket;
  let admin: S3Client;
  let bob: ReturnType<typeof agentClient>;
  const limit = 1024;

  beforeAll(async () => {
    casket = await startCasket({ agents: ['bob'], args: ['--retain-max-size', String(limit)] });
    admin = sdk(casket.url, casket.admin);
    bob = agentClient(casket.url, casket.agents.bob!);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(async () => {
    for (const c of [admin, bob?.client]) c?.destroy();
    await casket?.stop();
  });

  /** bob's PUT with x-casket-merge: text (signed) and If-Match, the body in pieces, sent with Transfer-Encoding: chunked (no length known before its end) or with aws-chunked (its decoded length declared). */
  function mergePut(key: string, ifMatch: string, pieces: Buffer[], framing: 'chunked' | 'aws-chunked') {
    const whole = Buffer.concat(pieces);
    const headers: Record<string, string> = { 'x-casket-merge': 'text', 'if-match': ifMatch };
    if (framing === 'chunked') return raw(casket.url, casket.agents.bob!, { method: 'PUT', path: `/${bucket}/${key}`, headers: { ...headers, 'transfer-encoding': 'chunked' }, body: pieces });
    // One unsigned aws-chunked chunk, then the end: `<hex size>\r\n<data>\r\n0\r\n\r\n`.
    const framed = Buffer.concat([Buffer.from(`${whole.length.toString(16)}\r\n`), whole, Buffer.from('\r\n0\r\n\r\n')]);
    return raw(casket.url, casket.agents.bob!, {
      method: 'PUT',
      path: `/${bucket}/${key}`,
      headers: { ...headers, 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(whole.length), 'content-length': String(framed.length) },
      body: framed,
      payloadHash: 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
    });
  }

  it.each(['chunked', 'aws-chunked'] as const)('a merge write larger than --retain-max-size (%s) is an ordinary write: 200 on a current If-Match, an ordinary 412 on a stale one', async (framing) => {
    const key = `large-${framing}.md`;
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: notes().slice(0, 500) }));
    const b = await bob.read(key);
    const pieces = [Buffer.from(notes()), Buffer.from(notes()), Buffer.from('the end\n')];
    const whole = Buffer.concat(pieces);
    expect(whole.length).toBeGreaterThan(limit);
    const put = await mergePut(key, b.etag, pieces, framing);
    expect([put.status, put.headers.etag], put.body).toEqual([200, quoted(whole)]);
    expect(put.headers['x-casket-merged']).toBeUndefined();
    const got = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect((await bytes(got.Body)).equals(whole)).toBe(true);

    // Someone else writes: the large merge write is refused as an ordinary write would be.
    const other = await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'a person replaced it\n' }));
    const stale = await mergePut(key, put.headers.etag as string, pieces, framing);
    expect([stale.status, xmlField(stale.body, 'Code'), stale.headers['x-casket-reason']], stale.body).toEqual([412, 'PreconditionFailed', 'precondition-failed']);
    const now = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(now.ETag).toBe(other.ETag);
  });

  it('a merge write within --retain-max-size sent with Transfer-Encoding: chunked still merges', async () => {
    const key = 'small-chunked.md';
    const base = Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n') + '\n';
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: base }));
    const b = await bob.read(key);
    const theirs = edit(base, 'line 2\n', 'line 2 (a person)\n');
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: theirs }));
    await keptAt(casket, key, base);
    const mine = edit(base, 'line 17\n', 'line 17 (bob)\n');
    const put = await mergePut(key, b.etag, [Buffer.from(mine.slice(0, 50)), Buffer.from(mine.slice(50))], 'chunked');
    const merged = edit(theirs, 'line 17\n', 'line 17 (bob)\n');
    expect([put.status, put.headers.etag, put.headers['x-casket-merged']], put.body).toEqual([200, quoted(merged), quoted(theirs)]);
  });
});

const haveRedis = need('redis-server', hasRedis());

describe.runIf(haveRedis)('two caskets sharing Redis in front of one upstream', () => {
  let redis: RunningRedis;
  let upstream: Upstream;
  let one: RunningCasket;
  let two: RunningCasket;

  beforeAll(async () => {
    redis = await startRedis();
    upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
    one = await startCasket({ agents: ['alice', 'bob'], upstream, args: ['--state', 'redis', '--redis-url', redis.url] });
    // The same credentials on both replicas: copy one's credentials file.
    two = await startCasket({ agents: [], upstream, args: ['--state', 'redis', '--redis-url', redis.url, '--credentials', `${one.dataDir}/test-credentials.json`] });
  });
  afterAll(async () => {
    await two?.stop();
    await one?.stop();
    await upstream?.stop();
    await redis?.stop();
  });

  it('a refusal from one links a diff the other serves', async () => {
    const admin = sdk(one.url, one.admin);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    const base = notes();
    await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared.md', Body: base }));
    const bobOnOne = agentClient(one.url, one.agents.bob!);
    const aliceOnTwo = agentClient(two.url, one.agents.alice!);
    const b = await bobOnOne.read('shared.md');
    const a = await aliceOnTwo.read('shared.md');
    await aliceOnTwo.write('shared.md', edit(a.text, 'item 1.9: something to remember about topic 1', 'item 1.9: from replica two'), a.etag);
    const f = await failure(bobOnOne.write('shared.md', 'x', b.etag));
    expect(f.status).toBe(412);
    const link = f.error.Diff as string;
    expect(link).toContain(`from=${sha(base)}`);
    const diff = await fetchSigned(two.url, one.agents.bob!, link);
    expect(diff.status).toBe(200);
    expect(changedLines(diff.body)).toEqual(['-- item 1.9: something to remember about topic 1', '+- item 1.9: from replica two']);
    // And a merge made on one replica from a base read on the other.
    const b2 = await bobOnOne.read('shared.md');
    const a2 = await aliceOnTwo.read('shared.md');
    await aliceOnTwo.write('shared.md', edit(a2.text, 'item 2.2: something', 'item 2.2: alice'), a2.etag);
    const merged = await bobOnOne.write('shared.md', edit(b2.text, 'item 4.4: something', 'item 4.4: bob'), b2.etag, true);
    expect(bobOnOne.state.headers['x-casket-merged']).toBeDefined();
    const final = (await bobOnOne.read('shared.md')).text;
    expect(final).toContain('item 2.2: alice');
    expect(final).toContain('item 4.4: bob');
    expect(merged.ETag).toBe(quoted(final));
    for (const c of [admin, bobOnOne.client, aliceOnTwo.client]) c.destroy();
  });
});
