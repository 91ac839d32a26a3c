/**
 * What a CopyObject costs upstream, counted from casket's own
 * casket_upstream_duration_seconds (one observation per upstream request, by
 * method), and that casket's promises on a copy hold either way (issue 42
 * item 4; src/s3/operations/copy-object.ts, src/backends/s3/copy.ts):
 *
 * - moto 5.2 and Ceph RGW 16 (CASKET_TEST_UPSTREAM=rgw) enforce no condition
 *   on CopyObject (the probe says so: capabilities.ts): casket reads the
 *   source and writes it, one GET and one PUT.
 * - moto with AWS's CopyObject conditions (test/helpers/moto_server.py,
 *   CASKET_MOTO_COPY_CONDITIONS, as AWS documents them since 2025-10): one
 *   HEAD of the source and ONE upstream CopyObject, no byte through casket;
 *   the destination's ETag is the SHA-256 of its bytes, the writer and the
 *   metadata directive as before, an agent's copy still needs its condition,
 *   a refused copy changes nothing, and copies racing conditional PUTs on one
 *   counter lose no update (a checker judges the history, helpers/history.ts).
 */
import { CopyObjectCommand, CreateBucketCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { introspect } from '../helpers/agents.js';
import { checkChain, type AckedWrite } from '../helpers/history.js';
import { until } from '../helpers/poll.js';
import { startMoto, startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const quoted = (s: string) => `"${sha(s)}"`;

/** Upstream requests casket has made so far, by method. */
async function upstreamRequests(casket: RunningCasket): Promise<Record<string, number>> {
  const text = await (await fetch(`${casket.url}/_casket/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^casket_upstream_duration_seconds_count\{method="([A-Z]+)"\} (\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** The requests made while `run` ran (nothing else talks to this casket meanwhile). */
async function counted(casket: RunningCasket, run: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await upstreamRequests(casket);
  await run();
  const after = await upstreamRequests(casket);
  return Object.fromEntries(Object.entries(after).flatMap(([method, n]) => (n - (before[method] ?? 0) > 0 ? [[method, n - (before[method] ?? 0)]] : [])));
}

/** The capabilities casket logged once its probe ran. */
async function probed(casket: RunningCasket): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined;
  await until(() => {
    for (const line of casket.logs) {
      if (!line.includes('upstream conditional writes probed')) continue;
      found = (JSON.parse(line) as { capabilities: Record<string, unknown> }).capabilities;
    }
    return found !== undefined;
  }, 'the capability probe');
  return found!;
}

function setup(start: () => Promise<Upstream>) {
  const t = {} as { upstream: Upstream; casket: RunningCasket; admin: S3Client; agent: S3Client };
  beforeAll(async () => {
    t.upstream = await start();
    t.casket = await startCasket({ upstream: t.upstream, agents: ['ada'] });
    t.admin = sdk(t.casket.url, t.casket.admin);
    t.agent = sdk(t.casket.url, t.casket.agents.ada!);
    await t.admin.send(new CreateBucketCommand({ Bucket: 'copies' }));
  });
  afterAll(async () => {
    t.admin?.destroy();
    t.agent?.destroy();
    await t.casket?.stop();
    await t.upstream?.stop();
  });
  return t;
}

describe(`in front of ${upstreamKindFromEnv() ?? 'moto'}, which enforces no CopyObject condition`, () => {
  const t = setup(() => startUpstream(upstreamKindFromEnv() ?? 'moto'));

  it('the probe finds none, and a copy is one GET of the source and one PUT of its bytes', async () => {
    expect(await probed(t.casket)).toMatchObject({ copySourceIfMatch: false, ifMatchCopy: false, ifNoneMatchCopy: false });
    await t.admin.send(new PutObjectCommand({ Bucket: 'copies', Key: 'src', Body: 'source bytes', ContentType: 'text/plain' }));
    const requests = await counted(t.casket, () => t.admin.send(new CopyObjectCommand({ Bucket: 'copies', Key: 'dst', CopySource: 'copies/src' })));
    expect(requests).toEqual({ GET: 1, PUT: 1 });
    const head = await t.admin.send(new HeadObjectCommand({ Bucket: 'copies', Key: 'dst' }));
    expect(head.ETag).toBe(quoted('source bytes'));
    expect(head.ContentType).toBe('text/plain');
  });
});

describe('in front of moto enforcing CopyObject conditions as AWS does', () => {
  const t = setup(() => startMoto({ copyConditions: true }));

  it('the probe finds them, and a copy is one HEAD of the source and one upstream CopyObject; the ETag is the SHA-256, the metadata directive holds', async () => {
    expect(await probed(t.casket)).toMatchObject({ copySourceIfMatch: true, ifMatchCopy: true, ifNoneMatchCopy: true });
    await t.admin.send(new PutObjectCommand({ Bucket: 'copies', Key: 'src', Body: 'source bytes', ContentType: 'text/plain', Metadata: { colour: 'blue' } }));
    const copy = await counted(t.casket, async () => {
      const answer = await t.admin.send(new CopyObjectCommand({ Bucket: 'copies', Key: 'dst', CopySource: 'copies/src' }));
      expect(answer.CopyObjectResult?.ETag).toBe(quoted('source bytes'));
    });
    expect(copy).toEqual({ HEAD: 1, PUT: 1 });
    const got = await t.admin.send(new GetObjectCommand({ Bucket: 'copies', Key: 'dst' }));
    expect({ etag: got.ETag, type: got.ContentType, meta: got.Metadata, body: (await bytes(got.Body)).toString() }).toEqual({ etag: quoted('source bytes'), type: 'text/plain', meta: { colour: 'blue' }, body: 'source bytes' });
    // REPLACE: the request's own metadata.
    await t.admin.send(new CopyObjectCommand({ Bucket: 'copies', Key: 'dst', CopySource: 'copies/src', MetadataDirective: 'REPLACE', ContentType: 'application/json', Metadata: { colour: 'red' } }));
    const replaced = await t.admin.send(new HeadObjectCommand({ Bucket: 'copies', Key: 'dst' }));
    expect({ etag: replaced.ETag, type: replaced.ContentType, meta: replaced.Metadata }).toEqual({ etag: quoted('source bytes'), type: 'application/json', meta: { colour: 'red' } });
  });

  it("an agent's copy needs its condition; with it, one CopyObject that records the agent as the writer; a wrong If-Match changes nothing", async () => {
    await t.admin.send(new PutObjectCommand({ Bucket: 'copies', Key: 'a-src', Body: 'agent source' }));
    await t.admin.send(new PutObjectCommand({ Bucket: 'copies', Key: 'a-dst', Body: 'before' }));
    const unconditioned = await failure(t.agent.send(new CopyObjectCommand({ Bucket: 'copies', Key: 'a-dst', CopySource: 'copies/a-src' })));
    expect(unconditioned.status).toBe(428);
    const wrong = await failure(t.agent.send(new CopyObjectCommand({ Bucket: 'copies', Key: 'a-dst', CopySource: 'copies/a-src', IfMatch: quoted('not it') })));
    expect(wrong.status).toBe(412);
    expect((await t.admin.send(new HeadObjectCommand({ Bucket: 'copies', Key: 'a-dst' }))).ETag).toBe(quoted('before'));
    // The agent reads the destination (its stamp), then copies onto it.
    await t.agent.send(new GetObjectCommand({ Bucket: 'copies', Key: 'a-dst' })).then((r) => bytes(r.Body));
    await t.admin.send(new HeadObjectCommand({ Bucket: 'copies', Key: 'a-src' }));
    const requests = await counted(t.casket, () => t.agent.send(new CopyObjectCommand({ Bucket: 'copies', Key: 'a-dst', CopySource: 'copies/a-src', IfMatch: quoted('before') })));
    expect(requests).toEqual({ HEAD: 1, PUT: 1 });
    // The writer comes back on reads as x-casket-writer (object-headers.ts).
    const writer = { name: '' };
    t.admin.middlewareStack.add((next) => async (args) => {
      const out = await next(args);
      writer.name = String((out.response as { headers?: Record<string, string> }).headers?.['x-casket-writer'] ?? '');
      return out;
    }, { step: 'deserialize', name: 'writerHeader' });
    const head = await t.admin.send(new HeadObjectCommand({ Bucket: 'copies', Key: 'a-dst' }));
    t.admin.middlewareStack.remove('writerHeader');
    expect({ etag: head.ETag, writer: writer.name }).toEqual({ etag: quoted('agent source'), writer: 'ada' });
    // The write log has the copy as the agent's, from the version it replaced (the refused attempts wrote nothing).
    const log = await introspect(t.casket.url, t.casket.admin, '/_casket/writes?bucket=copies&key=a-dst');
    expect(log.body.writes.map((w: { operation: string; agent?: string; previousETag?: string; newETag?: string }) => [w.operation, w.agent, w.previousETag, w.newETag])).toEqual([
      ['CopyObject', 'ada', quoted('before'), quoted('agent source')],
      ['PutObject', undefined, undefined, quoted('before')],
    ]);
    // If-None-Match: * onto an existing key: refused, nothing copied.
    const exists = await failure(t.agent.send(new CopyObjectCommand({ Bucket: 'copies', Key: 'a-dst', CopySource: 'copies/a-src', IfNoneMatch: '*' })));
    expect(exists.status).toBe(412);
    expect((await t.admin.send(new HeadObjectCommand({ Bucket: 'copies', Key: 'a-dst' }))).ETag).toBe(quoted('agent source'));
  });

  it('copies and conditional PUTs racing on one counter lose no update (checked history)', async () => {
    const s3 = t.admin;
    await s3.send(new PutObjectCommand({ Bucket: 'copies', Key: 'counter', Body: '0' }));
    const acks: AckedWrite[] = [];
    // Reads may be retried: moto serves them outside its write lock, and under
    // load one can fail with a 500 (seen once in a Node 22 run at load 10).
    // A read changes nothing, so its retry cannot hide a lost update; writes
    // are sent once and judged by the checker.
    const reader = sdk(t.casket.url, t.casket.admin, { retries: 4 });
    const writer = async (w: number) => {
      for (let i = 0; i < 12; i++) {
        const got = await reader.send(new GetObjectCommand({ Bucket: 'copies', Key: 'counter' }));
        const from = got.ETag!;
        const value = Number((await bytes(got.Body)).toString()) + 1;
        try {
          let to: string;
          if (w % 2 === 0) {
            to = (await s3.send(new PutObjectCommand({ Bucket: 'copies', Key: 'counter', Body: String(value), IfMatch: from }))).ETag!;
          } else {
            // The next value staged under a key of this writer's, then copied onto the counter.
            await s3.send(new PutObjectCommand({ Bucket: 'copies', Key: `stage-${w}`, Body: String(value) }));
            to = (await s3.send(new CopyObjectCommand({ Bucket: 'copies', Key: 'counter', CopySource: `copies/stage-${w}`, IfMatch: from }))).CopyObjectResult!.ETag!;
          }
          acks.push({ writer: `w${w}`, from, to, value });
        } catch (e) {
          if ((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== 412) throw e;
        }
      }
    };
    const initial = { etag: quoted('0'), value: 0 };
    await Promise.all(Array.from({ length: 6 }, (_, w) => writer(w)));
    const last = await s3.send(new GetObjectCommand({ Bucket: 'copies', Key: 'counter' }));
    const final = { etag: last.ETag!, value: Number((await bytes(last.Body)).toString()) };
    reader.destroy();
    expect(final.etag).toBe(quoted(String(final.value)));
    const verdict = checkChain(initial, acks, final);
    expect(verdict.problems).toEqual([]);
    expect(verdict.ok).toBe(true);
    expect(acks.some((a) => a.writer === 'w1' || a.writer === 'w3' || a.writer === 'w5')).toBe(true);
  }, 120_000);
});
