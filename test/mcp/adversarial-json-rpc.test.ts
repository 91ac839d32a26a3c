/**
 * /_casket/mcp under adversarial JSON-RPC (issue 37, "beyond the list"): a
 * property test (fast-check) that POSTs random sequences of single messages
 * and batches — duplicate, missing, null and malformed ids, notifications,
 * cancellations, responses sent to the server, unknown methods, oversized and
 * deeply nested input — from an anonymous client, a forged token, an agent
 * key allowed only `pub/*` and the admin, concurrently, to a real casket, and
 * asserts after every run:
 *
 * - every POST is answered within 10 s; a 200 answers every request it
 *   carried (by id), a 202 carried none, anything else is a 4xx refusal;
 * - a refused POST (and a batch with a repeated id) ran nothing: none of its
 *   writes is in casket's request log;
 * - every write casket logged was made with the access key of the caller
 *   whose POST asked for it; the agent key never wrote under secret/, the
 *   anonymous and forged callers never wrote at all;
 * - casket's resident memory stays under a bound.
 *
 * Fixed seed, printed; CASKET_FC_SEED=<n> replays another.
 */
import { readFileSync } from 'node:fs';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { mintToken } from '../helpers/mcp.js';
import { until } from '../helpers/poll.js';

const SEED = Number(process.env.CASKET_FC_SEED ?? 370037);
const RUNS = 120;
const ANSWER_WITHIN_MS = 10_000;
/** The body limit with --mcp-max-file-bytes 65536 is 2 × 64 KiB + 64 KiB: this is past it. */
const OVERSIZED = 300_000;
const RSS_BOUND = 400 * 1024 * 1024;

const bucket = 'files';
let casket: RunningCasket;
const tokens: Record<string, string> = {};
const keyOf: Record<string, string> = {};

beforeAll(async () => {
  casket = await startCasket({
    args: ['--mcp-max-file-bytes', '65536'],
    keys: {
      pubOnly: {
        agent: 'fuzzer',
        policy: {
          Statement: [
            { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], Resource: `arn:aws:s3:::${bucket}/pub/*` },
            { Effect: 'Allow', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${bucket}` },
          ],
        },
      },
    },
  });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'pub/seed.txt', Body: 'seed\n' }));
  admin.destroy();
  const agent: Cred = casket.keys.pubOnly!;
  tokens.agent = mintToken(agent, { agent: 'fuzzer' });
  tokens.admin = mintToken(casket.admin);
  tokens.forged = `${tokens.admin.slice(0, -4)}AAAA`;
  keyOf.agent = agent.accessKeyId;
  keyOf.admin = casket.admin.accessKeyId;
});
afterAll(async () => {
  await casket?.stop();
});

type Caller = 'anon' | 'forged' | 'agent' | 'admin';
type Id = number | string | null | undefined | object;

type Spec =
  | { kind: 'request'; id: Id; method: string }
  | { kind: 'tool'; id: Id; tool: string; area: 'pub' | 'secret' }
  | { kind: 'notification'; method: string; target: number | string }
  | { kind: 'response'; id: number | string; error: boolean }
  | { kind: 'nested'; id: Id; depth: number }
  | { kind: 'oversized'; id: Id }
  | { kind: 'junk'; text: string };

// Mostly good ids (so most POSTs reach the tools), some colliding (1 and "1"), some no id at all or not an id.
const id: fc.Arbitrary<Id> = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 1, max: 40 }) },
  { weight: 2, arbitrary: fc.constantFrom<Id>(1, '1', 'a') },
  { weight: 1, arbitrary: fc.constantFrom<Id>(null, undefined, 1.5, {}) },
);
const spec: fc.Arbitrary<Spec> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('request' as const), id, method: fc.constantFrom('ping', 'tools/list', 'initialize', 'resources/list', 'no/such/method') }) },
  { weight: 12, arbitrary: fc.record({ kind: fc.constant('tool' as const), id, tool: fc.constantFrom('write_file', 'write_file', 'apply_patch', 'apply_patch', 'get_file_info', 'read_text_file', 'list_directory', 'no_such_tool'), area: fc.constantFrom('pub' as const, 'secret' as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('notification' as const), method: fc.constantFrom('notifications/initialized', 'notifications/cancelled', 'notifications/progress', 'notifications/made-up'), target: fc.constantFrom<number | string>(1, 2, '1') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('response' as const), id: fc.constantFrom<number | string>(1, 2, 99), error: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('nested' as const), id, depth: fc.constantFrom(64, 5_000, 100_000) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('oversized' as const), id }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('junk' as const), text: fc.constantFrom('42', '"x"', 'null', '[]', '{"jsonrpc":"1.0","id":1,"method":"ping"}', '{"id":1,"method":7}') }) },
);
const postSpec = fc.record({
  caller: fc.constantFrom<Caller>('anon', 'forged', 'agent', 'agent', 'admin', 'admin'),
  batch: fc.boolean(),
  messages: fc.array(spec, { minLength: 1, maxLength: 5 }),
  version: fc.constantFrom<string | undefined>(undefined, undefined, '2025-06-18', '2025-11-25', '2025-11-25', '1999-01-01'),
});
type PostSpec = typeof postSpec extends fc.Arbitrary<infer T> ? T : never;

/** A valid request id (MCP: a string or an integer); other ids do not make a request one can answer. */
const answerable = (i: Id): i is string | number => typeof i === 'string' || (typeof i === 'number' && Number.isInteger(i));

let counter = 0;

interface Built {
  text: string;
  requestIds: Array<string | number>;
  /** Keys this POST asks to write, with the caller that asks. */
  writes: string[];
  duplicateIds: boolean;
}

function build(post: PostSpec): Built {
  const requestIds: Array<string | number> = [];
  const writes: string[] = [];
  const withId = (i: Id, rest: string) => `{"jsonrpc":"2.0"${i === undefined ? '' : `,"id":${JSON.stringify(i)}`},${rest}}`;
  const texts = (post.batch ? post.messages : post.messages.slice(0, 1)).map((m): string => {
    switch (m.kind) {
      case 'request': {
        if (answerable(m.id)) requestIds.push(m.id);
        const params = m.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fc', version: '1' } } : {};
        return withId(m.id, `"method":${JSON.stringify(m.method)},"params":${JSON.stringify(params)}`);
      }
      case 'tool': {
        if (answerable(m.id)) requestIds.push(m.id);
        const key = `${m.area}/${post.caller}-${counter++}.txt`;
        let args: Record<string, unknown>;
        if (m.tool === 'write_file') {
          writes.push(key);
          args = { path: `${bucket}/${key}`, content: `${key}\n`, create_only: true };
        } else if (m.tool === 'apply_patch') {
          writes.push(key);
          args = { patch: `--- /dev/null\n+++ b/${bucket}/${key}\n@@ -0,0 +1 @@\n+${key}\n` };
        } else if (m.tool === 'list_directory') args = { path: `${bucket}/${m.area}/` };
        else args = { path: `${bucket}/pub/seed.txt` };
        return withId(m.id, `"method":"tools/call","params":${JSON.stringify({ name: m.tool, arguments: args })}`);
      }
      case 'notification':
        return `{"jsonrpc":"2.0","method":${JSON.stringify(m.method)},"params":${m.method === 'notifications/cancelled' ? JSON.stringify({ requestId: m.target }) : m.method === 'notifications/progress' ? JSON.stringify({ progressToken: m.target, progress: 1 }) : '{}'}}`;
      case 'response':
        return `{"jsonrpc":"2.0","id":${JSON.stringify(m.id)},${m.error ? '"error":{"code":-32000,"message":"no"}' : '"result":{}'}}`;
      case 'nested':
        if (answerable(m.id)) requestIds.push(m.id);
        return withId(m.id, `"method":"tools/call","params":{"name":"get_file_info","arguments":{"path":${'['.repeat(m.depth)}${']'.repeat(m.depth)}}}`);
      case 'oversized':
        if (answerable(m.id)) requestIds.push(m.id);
        return withId(m.id, `"method":"tools/call","params":{"name":"write_file","arguments":{"path":"${bucket}/pub/big.txt","content":"${'x'.repeat(OVERSIZED)}"}}`);
      case 'junk':
        return m.text;
    }
  });
  const seen = new Set<string>();
  let duplicateIds = false;
  for (const m of post.batch ? post.messages : post.messages.slice(0, 1)) {
    if ((m.kind === 'request' || m.kind === 'tool' || m.kind === 'nested' || m.kind === 'oversized') && m.id !== undefined) {
      const k = typeof m.id === 'string' || typeof m.id === 'number' ? String(m.id) : JSON.stringify(m.id);
      if (seen.has(k)) duplicateIds = true;
      seen.add(k);
    }
  }
  return { text: post.batch ? `[${texts.join(',')}]` : texts[0]!, requestIds, writes, duplicateIds };
}

interface Outcome {
  post: PostSpec;
  built: Built;
  status: number;
  body: string;
  ms: number;
}

async function send(post: PostSpec): Promise<Outcome> {
  const built = build(post);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (post.caller !== 'anon') headers.authorization = `Bearer ${tokens[post.caller]}`;
  if (post.version) headers['mcp-protocol-version'] = post.version;
  const started = Date.now();
  const res = await fetch(new URL('/_casket/mcp', casket.url), { method: 'POST', headers, body: built.text, signal: AbortSignal.timeout(ANSWER_WITHIN_MS) }).catch((e: Error) => {
    throw new Error(`no answer within ${ANSWER_WITHIN_MS} ms (${e.message}: ${String((e.cause as Error | undefined)?.message)}; casket ${casket.proc.exitCode === null ? 'running' : `exited ${casket.proc.exitCode}`}) to ${post.caller}: ${built.text.slice(0, 300)}`);
  });
  const body = await res.text();
  return { post, built, status: res.status, body, ms: Date.now() - started };
}

/** Successful PutObjects casket logged: key → access keys. */
function loggedWrites(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of casket.logs) {
    if (!line.includes('"PutObject"')) continue;
    const e = JSON.parse(line) as { msg?: string; key?: string; accessKey?: string; status?: number };
    if (e.msg !== 'request' || e.key === undefined || e.status !== 200) continue;
    out.set(e.key, [...(out.get(e.key) ?? []), e.accessKey ?? '(none)']);
  }
  return out;
}

function rss(): number {
  const status = readFileSync(`/proc/${casket.proc.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

function judge(o: Outcome): void {
  const where = `${o.post.caller} → ${o.status} ${o.body.slice(0, 200)}\nsent: ${o.built.text.slice(0, 300)}`;
  expect(o.status < 500, where).toBe(true);
  if (o.built.duplicateIds) expect(o.status, `a batch with a repeated id must be refused: ${where}`).toBeGreaterThanOrEqual(400);
  if (o.status === 202) expect(o.built.requestIds, `202 for a POST with requests: ${where}`).toEqual([]);
  if (o.status === 200) {
    const answers = [JSON.parse(o.body)].flat() as Array<{ id?: unknown }>;
    const answered = new Set(answers.map((a) => a.id));
    for (const i of o.built.requestIds) expect(answered.has(i), `request ${JSON.stringify(i)} unanswered: ${where}`).toBe(true);
  }
}

describe('/_casket/mcp under adversarial JSON-RPC', () => {
  it('answers or refuses every POST, acts only as each POST\'s own caller, and stays within a memory bound', async () => {
    console.log(`adversarial JSON-RPC: seed ${SEED} (CASKET_FC_SEED to change), ${RUNS} runs`);
    const outcomes: Outcome[] = [];
    let peak = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(postSpec, { minLength: 2, maxLength: 12 }), async (posts) => {
        // All of a run's POSTs at once: the callers' tool calls interleave.
        const done = await Promise.all(posts.map(send));
        for (const o of done) judge(o);
        outcomes.push(...done);
        peak = Math.max(peak, rss());
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // Writes: each by its own caller; refused POSTs wrote nothing.
    const allowed = new Map<string, Caller>();
    const refused = new Set<string>();
    for (const o of outcomes) for (const k of o.built.writes) (o.status === 200 ? allowed.set(k, o.post.caller) : refused.add(k));
    // Log lines reach the test a moment after the answers: wait until their count holds still.
    let last = -1;
    await until(() => {
      const now = loggedWrites().size;
      const still = now === last;
      last = now;
      return still;
    }, 'the request log to settle');
    const logged = loggedWrites();
    for (const [key, by] of logged) {
      if (key === 'pub/seed.txt') continue;
      const owner = allowed.get(key);
      expect(refused.has(key), `${key} was written although its POST was refused`).toBe(false);
      expect(owner === 'admin' || owner === 'agent', `${key} written by ${by} for caller ${owner}`).toBe(true);
      expect(by, key).toEqual(by.map(() => keyOf[owner!]));
      if (owner === 'agent') expect(key.startsWith('pub/'), `the agent key wrote ${key}`).toBe(true);
    }
    const answered = outcomes.filter((o) => o.status === 200).length;
    console.log(`adversarial JSON-RPC: ${outcomes.length} POSTs (${answered} answered 200), ${logged.size} writes, slowest ${Math.max(...outcomes.map((o) => o.ms))} ms, peak RSS ${Math.round(peak / 1048576)} MiB`);
    expect(logged.size).toBeGreaterThan(0);
    expect(peak).toBeLessThan(RSS_BOUND);
  }, 120_000);
});
