/**
 * A write's state changes on Redis are ONE command — one script, one round
 * trip — not one command per record (issue 42 item 1; src/state/redis.ts
 * RECORD_WRITE): the ETag index entry the upstream's version needs, the
 * agent's stamp and the write-log entry (with the key's last write).
 * Observed on a real Redis through MONITOR
 * (https://redis.io/docs/latest/commands/monitor/), which shows each command
 * a client sends and, apart, each command a script runs ("lua"): what casket
 * sends during one PutObject is read here, then what the script did.
 */
import { CompleteMultipartUploadCommand, CopyObjectCommand, CreateBucketCommand, CreateMultipartUploadCommand, GetObjectCommand, PutObjectCommand, UploadPartCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { until } from '../helpers/poll.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

/** Commands that change what Redis holds (what a write records), as MONITOR names them. */
const CHANGES = new Set(['set', 'del', 'lpush', 'ltrim', 'pexpire', 'hset', 'zadd', 'zrem', 'incr', 'multi', 'exec', 'evalsha', 'eval']);

/**
 * The state store's keys (the layout in src/state/redis.ts), under the
 * default prefix. Other parts keep their own keys in the same Redis, each a
 * round trip of its own: the changeset gate (gate:, taken before the commit
 * and released after it) and pre-image retention (retained).
 */
const STATE_KEY = /^casket:(stamp:|stamps|agent:|write-log|last-write:|etag-index:)/;

interface Seen {
  /** Commands casket sent, in order. */
  sent: string[];
  /** Commands a script ran. */
  scripted: string[];
}

describe.runIf(need('redis-server', hasRedis()))('one Redis round trip per write', () => {
  let redis: RunningRedis;
  let upstream: Upstream;
  let casket: RunningCasket;
  let monitor: Redis;
  let admin: S3Client;
  let agent: S3Client;
  let seen: Seen | undefined;

  beforeAll(async () => {
    redis = await startRedis();
    upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
    casket = await startCasket({ upstream, agents: ['ada'], args: ['--state', 'redis', '--redis-url', redis.url] });
    admin = sdk(casket.url, casket.admin);
    agent = sdk(casket.url, casket.agents.ada!);
    await admin.send(new CreateBucketCommand({ Bucket: 'trips' }));
    monitor = await new Redis(redis.url).monitor();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (!seen) return;
      const name = String(args[0]).toLowerCase();
      const key = String((name.startsWith('eval') ? args[3] : args[1]) ?? '');
      if (source === 'lua') {
        if (STATE_KEY.test(key)) seen.scripted.push(name);
      } else if (CHANGES.has(name) && (STATE_KEY.test(key) || name === 'multi' || name === 'exec')) seen.sent.push(`${name} ${key}`);
    });
  });
  afterAll(async () => {
    admin?.destroy();
    agent?.destroy();
    monitor?.disconnect();
    await casket?.stop();
    await upstream?.stop();
    await redis?.stop();
  });

  /**
   * The state changes Redis saw while `run` wrote `key` (MONITOR lags the
   * commands: a marker opens and one closes the window). Commands casket
   * sent on other keys — an earlier read's index entry, written in the
   * background — are not the write's.
   */
  async function watched(key: string, run: () => Promise<unknown>): Promise<Seen> {
    const marker = new Redis(redis.url);
    const mark = async (tag: string) => {
      const arrived = new Promise<void>((resolve) => monitor.on('monitor', (_t: string, args: string[]) => args[1] === tag && resolve()));
      await marker.get(tag);
      await arrived;
    };
    await mark(`open-${Date.now()}`);
    seen = { sent: [], scripted: [] };
    await run();
    await mark(`close-${Date.now()}`);
    marker.disconnect();
    const out = seen;
    seen = undefined;
    const ours = (sent: string) => {
      const [name, on = ''] = sent.split(/ (.*)/s);
      return on === 'casket:write-log' || on === 'undefined' || on.includes(JSON.stringify(['trips', key]).slice(1, -1)) ? [name!] : [];
    };
    return { sent: out.sent.flatMap(ours), scripted: out.scripted };
  }

  it("a person's PutObject records its ETag index entry and write-log entry in one script", async () => {
    const body = 'a small file';
    const got = await watched('plain', () => admin.send(new PutObjectCommand({ Bucket: 'trips', Key: 'plain', Body: body })));
    // EVAL the first time on a connection, EVALSHA after (ioredis defineCommand): one command either way.
    expect(got.sent).toEqual([expect.stringMatching(/^eval(sha)?$/)]);
    // The script did what the separate commands did: the index entry, the log and its trim, the key's last write.
    expect(got.scripted).toEqual(expect.arrayContaining(['set', 'lpush', 'ltrim']));
    expect((await admin.send(new GetObjectCommand({ Bucket: 'trips', Key: 'plain' }))).ETag).toBe(`"${createHash('sha256').update(body).digest('hex')}"`);
  });

  it("an agent's PutObject adds its stamp to the same script", async () => {
    await admin.send(new PutObjectCommand({ Bucket: 'trips', Key: 'doc', Body: 'v1' }));
    const read = await agent.send(new GetObjectCommand({ Bucket: 'trips', Key: 'doc' }));
    await bytes(read.Body);
    // The read's stamp is recorded once the body is out, which may be after the client has it.
    const stamps = new Redis(redis.url);
    await until(async () => (await stamps.hget(`casket:stamp:${JSON.stringify(['ada', 'trips', 'doc'])}`, 'etag')) !== null, "the agent's read stamp");
    stamps.disconnect();
    const got = await watched('doc', () => agent.send(new PutObjectCommand({ Bucket: 'trips', Key: 'doc', Body: 'v2', IfMatch: read.ETag })));
    expect(got.sent).toEqual([expect.stringMatching(/^eval(sha)?$/)]);
    expect(got.scripted).toEqual(expect.arrayContaining(['hset', 'zadd', 'set', 'lpush']));
    // The stamp is the agent's write: a second write on the version it made goes through.
    const made = await agent.send(new GetObjectCommand({ Bucket: 'trips', Key: 'doc' }));
    expect((await bytes(made.Body)).toString()).toBe('v2');
    await agent.send(new PutObjectCommand({ Bucket: 'trips', Key: 'doc', Body: 'v3', IfMatch: made.ETag }));
  });

  it('CopyObject and CompleteMultipartUpload record in one script too', async () => {
    await admin.send(new PutObjectCommand({ Bucket: 'trips', Key: 'copy-src', Body: 'copied' }));
    const copy = await watched('copy-dst', () => admin.send(new CopyObjectCommand({ Bucket: 'trips', Key: 'copy-dst', CopySource: 'trips/copy-src' })));
    expect(copy.sent).toEqual([expect.stringMatching(/^eval(sha)?$/)]);
    const { UploadId } = await admin.send(new CreateMultipartUploadCommand({ Bucket: 'trips', Key: 'multi' }));
    const part = await admin.send(new UploadPartCommand({ Bucket: 'trips', Key: 'multi', UploadId, PartNumber: 1, Body: 'one part' }));
    const complete = await watched('multi', () => admin.send(new CompleteMultipartUploadCommand({ Bucket: 'trips', Key: 'multi', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } })));
    // The entries indexed before the upstream completes (multipart.ts) and the completed upload's id go with the rest.
    expect(complete.sent).toEqual([expect.stringMatching(/^eval(sha)?$/)]);
    // Recorded, the completed upload's id answers a retry whose answer was lost (multipart.ts completedBefore).
    const again = await admin.send(new CompleteMultipartUploadCommand({ Bucket: 'trips', Key: 'multi', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
    expect(again.ETag).toBe((await admin.send(new GetObjectCommand({ Bucket: 'trips', Key: 'multi' }))).ETag);
  });
});
