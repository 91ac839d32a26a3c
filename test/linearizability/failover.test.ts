/**
 * No lost update across a Redis failover (docs/design.md §11), judged by
 * the history checker (helpers/history.ts), not by eye.
 *
 * A Redis group of a primary, two replicas and three sentinels; three caskets
 * that find the primary through the sentinels (--redis-sentinels, and by
 * default each state change waits for one replica); one upstream (moto the
 * test starts, or CASKET_TEST_UPSTREAM's). 16 writers increment one counter —
 * GET through one casket, PUT n + 1 with If-Match through the next — eight as
 * bound agents (their writes need their read stamp from Redis) and eight with
 * a person's key; the bytes repeat across writers (two that read "10" both
 * write "11"). Mid-run the primary is SIGKILLed; Sentinel promotes a replica;
 * writing goes on. Then the old primary comes back (Sentinel makes it a
 * replica of the new one), and once it is in sync the new primary is killed
 * too: a second failover, onto the other survivor or onto the old primary.
 *
 * Two replicas, not one: with a replica's confirmation required, a lone
 * survivor has nobody to confirm its writes, and agent writes would wait for
 * the old primary's return (which is the second half of this test).
 *
 * Judged: every acknowledged write forms one chain and the final value equals
 * the acknowledged increments (0 lost); a write answers 200, 412 or 503 —
 * never 500 — and a 503 carries Retry-After and none of Redis's own words;
 * reads never fail; after each kill an agent's write is acknowledged again
 * within 30 s, without a restart. Figures are printed.
 *
 * CASKET_FAILOVER_ATTEMPTS sets the conditional writes per run (default 300);
 * CASKET_FAILOVER_RUNS how many runs (default 1; CI runs 5).
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { checkChain, type AckedWrite } from '../helpers/history.js';
import { GROUP, hasSentinel, startRedisGroup } from '../helpers/redis-sentinel.js';
import { until } from '../helpers/poll.js';
import { need } from '../helpers/tools.js';
import { startUpstream, upstreamKindFromEnv } from '../helpers/upstream.js';

const ATTEMPTS = Number(process.env.CASKET_FAILOVER_ATTEMPTS ?? 300);
const RUNS = Number(process.env.CASKET_FAILOVER_RUNS ?? 1);
const WRITERS = 16;
const AGENTS = Array.from({ length: WRITERS / 2 }, (_, i) => `a${i}`);
const bucket = 'failover';
const key = 'counter';
/** The bound this test holds recovery to: writes succeed again within 30 s of the kill. */
const RECOVERY_MS = 30_000;
/** A run that is still going after this is stuck: it fails rather than hangs CI. */
const RUN_BUDGET_MS = 4 * 60_000;

/** What the current run started, ended when it ends (five runs must not leave five Redis groups behind). */
let cleanup: Array<() => Promise<void>> = [];
async function endRun(): Promise<void> {
  const started = cleanup.reverse();
  cleanup = [];
  for (const c of started) await c().catch(() => {});
}
afterAll(endRun);

interface Writer {
  name: string;
  agent: boolean;
  reader: S3Client;
  writer: S3Client;
}

/** What an SDK error says about itself: status, Retry-After, message. */
function described(e: unknown): { status: number | undefined; retryAfter: string | undefined; reason: string | undefined; message: string } {
  const err = e as { message?: string; $metadata?: { httpStatusCode?: number }; $response?: { headers?: Record<string, string> } };
  const headers = err.$response?.headers ?? {};
  return { status: err.$metadata?.httpStatusCode, retryAfter: headers['retry-after'], reason: headers['x-casket-reason'], message: String(err.message) };
}

async function oneRun(run: number) {
  const group = await startRedisGroup({ replicas: 2 });
  cleanup.push(() => group.stop());
  const upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
  cleanup.push(() => upstream.stop());
  const args = ['--state', 'redis', '--redis-sentinels', group.sentinels, '--redis-sentinel-name', GROUP];
  const caskets: RunningCasket[] = [];
  for (let i = 0; i < 3; i++) {
    const c = await startCasket({ agents: AGENTS, args, upstream, ...(caskets[0] && { credentialsOf: caskets[0] }) });
    cleanup.push(() => c.stop());
    caskets.push(c);
  }
  const client = (c: RunningCasket, cred: { accessKeyId: string; secretAccessKey: string }, retries: number) => {
    const s3 = sdk(c.url, cred, { retries });
    cleanup.push(async () => s3.destroy());
    return s3;
  };
  const admin = client(caskets[0]!, caskets[0]!.admin, 3);
  await admin.send(new CreateBucketCommand({ Bucket: bucket })).catch(() => undefined);
  // Readers retry as SDKs do (moto answers an occasional GET racing a PUT with 500); writers make one attempt.
  const writers: Writer[] = Array.from({ length: WRITERS }, (_, i) => {
    const agent = i < AGENTS.length;
    const cred = agent ? caskets[0]!.agents[AGENTS[i]!]! : caskets[0]!.admin;
    return { name: agent ? AGENTS[i]! : `person${i}`, agent, reader: client(caskets[i % 3]!, cred, 3), writer: client(caskets[(i + 1) % 3]!, cred, 1) };
  });

  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '0' }));
  const first = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const start = { etag: first.ETag!, value: Number((await bytes(first.Body)).toString()) };

  const acks: Array<AckedWrite & { agent: boolean; sent: number }> = [];
  const figures = { attempts: 0, acknowledged: 0, conflicts: 0, unavailable: 0 };
  /** Agents' answers since the last kill, by status and reason: what a run that fails to recover was told. */
  const sinceKill = new Map<string, number>();
  const unexpected: string[] = [];
  /** Kill times, and when an agent write sent after each was first acknowledged. */
  const kills: number[] = [];
  const recovered: number[] = [];
  let done = false;
  const began = Date.now();

  // The failovers, driven by the run's own progress.
  const failovers = (async () => {
    await until(() => figures.attempts >= ATTEMPTS / 4 || unexpected.length > 0, 'a quarter of the attempts', RUN_BUDGET_MS);
    const firstPrimary = await group.primary();
    kills.push(Date.now());
    await group.kill(firstPrimary);
    const second = await group.failedOver(firstPrimary, 1);
    await until(() => recovered.length >= 1 || unexpected.length > 0, 'agent writes to be acknowledged after the first failover', RECOVERY_MS);
    // The old primary returns, empty: Sentinel makes it a replica of the new one.
    await group.restart(firstPrimary);
    // Usually still `second`; on a loaded machine the sentinels may have moved on by themselves.
    const before = await group.settled(2);
    await until(() => figures.attempts >= ATTEMPTS / 2 || unexpected.length > 0, 'half the attempts', RUN_BUDGET_MS);
    kills.push(Date.now());
    await group.kill(before);
    const third = await group.failedOver(before, 1);
    await until(() => recovered.length >= 2 || unexpected.length > 0, 'agent writes to be acknowledged after the second failover', RECOVERY_MS);
    return before === second ? [firstPrimary, second, third] : [firstPrimary, second, before, third];
  })();
  failovers.catch(() => (done = true));

  await Promise.all(
    writers.map(async (w) => {
      while (!done && unexpected.length === 0 && (figures.attempts < ATTEMPTS || recovered.length < 2) && Date.now() - began < RUN_BUDGET_MS) {
        let seen: { etag: string; value: number };
        try {
          const got = await w.reader.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
          seen = { etag: got.ETag!, value: Number((await bytes(got.Body)).toString()) };
        } catch (e) {
          unexpected.push(`${w.name} GET: ${described(e).status} ${described(e).message}`);
          return;
        }
        figures.attempts++;
        const sent = Date.now();
        try {
          const put = await w.writer.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: String(seen.value + 1), IfMatch: seen.etag }));
          acks.push({ writer: w.name, agent: w.agent, from: seen.etag, to: put.ETag!, value: seen.value + 1, sent });
          figures.acknowledged++;
          if (w.agent && kills.length > recovered.length && sent > kills[kills.length - 1]!) {
            recovered.push(Date.now());
            sinceKill.clear();
          }
        } catch (e) {
          const d = described(e);
          if (w.agent && kills.length > 0) sinceKill.set(`${d.status} ${d.reason ?? ''}`, (sinceKill.get(`${d.status} ${d.reason ?? ''}`) ?? 0) + 1);
          if (d.status === 412) figures.conflicts++;
          else if (d.status === 503 && d.retryAfter !== undefined && !/READONLY|NOREPLICAS|ioredis|Connection|WAIT|127\.0\.0\.1/.test(d.message)) {
            figures.unavailable++;
            // As a client honouring Retry-After would, if less patiently: no busy loop on two shared cores.
            await new Promise((r) => setTimeout(r, 200));
          } else unexpected.push(`${w.name} PUT: ${d.status} retry-after=${d.retryAfter} ${d.message}`);
        }
      }
    }),
  );
  done = true;
  const outcome = await failovers.then(
    (primaries) => ({ primaries }),
    (error: unknown) => ({ error }),
  );
  if ('error' in outcome) {
    const causes = caskets.flatMap((c) => c.logs.filter((l) => l.includes('"cause"')).slice(-3));
    throw new Error(
      `${(outcome.error as Error).message}; ${JSON.stringify(figures)}; agents were answered since the last kill: ${JSON.stringify([...sinceKill])}; ` +
        `primary now ${await group.primary().catch(() => '?')}; last causes logged: ${causes.join(' | ')}`,
    );
  }
  const primaries = outcome.primaries;
  const last = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const final = { etag: last.ETag!, value: Number((await bytes(last.Body)).toString()) };
  const verdict = checkChain(start, acks, final);
  const recovery = recovered.map((at, i) => at - kills[i]!);
  console.log(
    `failover run ${run} (${upstream.kind}): primary ${primaries.join(' → ')}; ${figures.attempts} attempts, ${figures.acknowledged} acknowledged ` +
      `(${acks.filter((a) => a.agent).length} by agents), ${figures.conflicts} conflicts (412), ${figures.unavailable} unavailable (503); ` +
      `agent writes acknowledged again ${recovery.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(' and ')} after each kill; ` +
      `final value ${final.value}, ${((Date.now() - began) / 1000).toFixed(1)} s, chain ${verdict.ok ? 'holds: 0 lost updates' : 'BROKEN'}`,
  );
  expect(unexpected).toEqual([]);
  expect(verdict.problems).toEqual([]);
  expect(figures.attempts).toBeGreaterThanOrEqual(ATTEMPTS);
  expect(figures.conflicts).toBeGreaterThan(0);
  expect(recovery).toHaveLength(2);
  for (const ms of recovery) expect(ms).toBeLessThan(RECOVERY_MS);
  // Both kinds of writer made progress on both sides of the failovers.
  expect(acks.some((a) => a.agent && a.sent > kills[1]!)).toBe(true);
  expect(acks.some((a) => !a.agent && a.sent > kills[1]!)).toBe(true);
}

describe.runIf(need('redis-server and redis-sentinel', hasSentinel()))('three caskets, a Redis primary that fails over twice', () => {
  for (let run = 1; run <= RUNS; run++) {
    it(`run ${run} of ${RUNS}: 16 writers whose bytes repeat, 0 lost acknowledged updates, writes back within 30 s`, { timeout: RUN_BUDGET_MS + 120_000 }, async () => {
      try {
        await oneRun(run);
      } finally {
        await endRun();
      }
    });
  }
});
