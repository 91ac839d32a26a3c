/**
 * `casket rollback` as its user meets it (src/rollback/command.ts): the
 * summary it prints, word for word; the exit status; every usage error (exit
 * 2) with what to fix; the flags as `--flag value`, `--flag=value` or the
 * environment; and a casket that cannot be reached, or a proxy in front of
 * it answering in HTML (exit 1). In-process (rollbackCommand against an
 * in-process casket), so `npm run mutate:rooms` sees it.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InProcessCasket } from '../helpers/in-process.js';
import { exitStatus, rollbackCommand, ROLLBACK_USAGE, summary } from '../../src/rollback/command.js';
import type { RollbackAnswer } from '../../src/rollback/plan.js';
import { agentPut, content, inProcessWithBucket } from './helpers.js';

const bucket = 'command';
const stops: Array<() => Promise<void>> = [];
let c: InProcessCasket;
let person: Awaited<ReturnType<typeof inProcessWithBucket>>['person'];
let since: string;
let env: Record<string, string>;

beforeAll(async () => {
  const made = await inProcessWithBucket(bucket, stops, ['alice']);
  c = made.c;
  person = made.person;
  for (const key of ['docs/a', 'src/b']) await person.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `${key} before` }));
  since = new Date().toISOString();
  for (const key of ['docs/a', 'src/b']) await agentPut(made.agents.alice!, bucket, key, `${key} after`);
  env = { CASKET_ROLLBACK_ENDPOINT: c.url, CASKET_ROLLBACK_ACCESS_KEY: c.admin.accessKeyId, CASKET_ROLLBACK_SECRET_KEY: c.admin.secretAccessKey };
});
afterAll(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

async function run(argv: string[], environment: Record<string, string> = env): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const out = { stdout: '', stderr: '' };
  const sink = (to: 'stdout' | 'stderr') => new Writable({ write: (chunk: Buffer, _enc, done) => { out[to] += chunk.toString(); done(); } });
  try {
    return { code: await rollbackCommand(argv, environment, { stdout: sink('stdout'), stderr: sink('stderr') }), ...out };
  } catch (e) {
    // src/cli.ts prints a UsageError's message and exits 2.
    if ((e as Error).name !== 'UsageError') throw e;
    return { code: 'usage', stdout: out.stdout, stderr: (e as Error).message };
  }
}

describe('casket rollback', () => {
  it('prints every part of an answer, as a person reads it', () => {
    const unit: RollbackAnswer = {
      agent: 'alice', changeset: 'cs-7', restoredAs: 'cs-9', writtenAs: 'rollback:alice', since: '2026-11-25T14:00:00.000Z', dryRun: false,
      restored: [
        { bucket: 'b', key: 'docs/a.md', action: 'put', from: '"a1"', to: '"a0"', source: 'retained' },
        { bucket: 'b', key: 'docs/new.md', action: 'delete', from: '"n1"', to: null },
      ],
      conflicts: [
        { bucket: 'b', key: 'docs/c.md', agentETag: '"c1"', currentETag: '"c2"', currentWriter: 'bob', diff: '--- a\n+++ b\n-one\n+two\n' },
        { bucket: 'b', key: 'docs/d.md', agentETag: null, currentETag: '"d2"' },
      ],
      unrecoverable: [{ bucket: 'b', key: 'docs/e.md', goalETag: '"e0"', reason: 'gone' }],
      notRestored: [{ bucket: 'b', key: 'docs/f.md', etag: '"f1"' }],
      unchanged: [{ bucket: 'b', key: 'docs/g.md', etag: null }],
    };
    expect(summary(unit)).toBe(`rollback of changeset cs-7 (by "alice", as a unit) — written as "rollback:alice" in changeset cs-9
restored 2:
  put    s3://b/docs/a.md  "a1" → "a0" (from retained)
  delete s3://b/docs/new.md  "n1" → (absent)
conflicts 2 (someone else wrote since; left as they are):
  s3://b/docs/c.md  agent's "c1", now "c2" by bob
      --- a
      +++ b
      -one
      +two
  s3://b/docs/d.md  agent's (absent), now "d2"
      (no diff: the agent's version is not retained)
unrecoverable 1:
  s3://b/docs/e.md  "e0": gone
not restored 1 (the changeset goes back whole or not at all; left as they are):
  s3://b/docs/f.md  "f1"
unchanged 1 (already at the version to restore):
  s3://b/docs/g.md  (absent)
`);
    const window: RollbackAnswer = { agent: 'alice', writtenAs: 'rollback:alice', since: '2026-11-25T14:00:00.000Z', until: '2026-11-25T15:00:00.000Z', dryRun: true, restored: [{ bucket: 'b', key: 'k', action: 'put', from: null, to: '"k0"' }], conflicts: [], unrecoverable: [], unchanged: [] };
    expect(summary(window)).toBe(`rollback of agent "alice" since 2026-11-25T14:00:00.000Z until 2026-11-25T15:00:00.000Z — dry run: nothing written
would restore 1:
  put    s3://b/k  (absent) → "k0"
conflicts 0 (someone else wrote since; left as they are):
unrecoverable 0:
unchanged 0 (already at the version to restore):
`);
    const { until: _, ...open } = window;
    expect(summary({ ...open, dryRun: false }).split('\n')[0]).toBe('rollback of agent "alice" since 2026-11-25T14:00:00.000Z — written as "rollback:alice"');
    // A refused restore whose key could not be read again (apply.ts, settled): unknown, never "(absent)", which says deleted.
    const unread: RollbackAnswer = { ...window, dryRun: false, restored: [], conflicts: [{ bucket: 'b', key: 'k', agentETag: '"k1"', currentUnread: 'InternalError' }] };
    expect(summary(unread).split('\n')[3]).toBe('  s3://b/k  agent\'s "k1", now unknown: written since, then could not be read (InternalError)');
    expect([exitStatus(window), exitStatus(unit), exitStatus({ ...window, unrecoverable: unit.unrecoverable }), exitStatus({ ...window, conflicts: unit.conflicts })]).toEqual([0, 3, 3, 3]);
  });

  it('a usage error says what to fix, and sends nothing', async () => {
    const usage = async (argv: string[], environment?: Record<string, string>) => {
      const r = await run(argv, environment);
      expect(r.code, r.stdout).toBe('usage');
      return r.stderr.replace(`\n${ROLLBACK_USAGE}`, ' +usage');
    };
    expect(await usage(['--agent', 'alice', '--bogus', 'x'])).toBe('unknown option --bogus +usage');
    expect(await usage(['--bogus=x'])).toBe('unknown option --bogus +usage');
    expect(await usage(['--since', since, '--agent'])).toBe('--agent needs a value +usage');
    expect(await usage(['--agent', 'alice', '--since', since], {})).toBe('--endpoint (or env CASKET_ROLLBACK_ENDPOINT) is required +usage');
    expect(await usage(['--agent', 'alice'], { ...env, CASKET_ROLLBACK_SECRET_KEY: '' })).toBe('--secret-key (or env CASKET_ROLLBACK_SECRET_KEY) is required +usage');
    expect(await usage(['--since', since])).toBe('--agent is required +usage');
    expect(await usage(['--agent=', '--since', since])).toBe('--agent is required +usage');
    expect(await usage(['--agent', 'alice'])).toBe('--since is required +usage');
    for (const bad of ['yesterday', '2026-13-01T00:00:00Z', '+002026-11-25T14:00:00Z']) expect(await usage(['--agent', 'alice', '--since', bad])).toBe(`--since must be an ISO 8601 time, e.g. 2026-11-25T14:00:00Z, not "${bad}"`);
    expect(await usage(['--agent', 'alice', '--since', since, '--until', 'never'])).toBe('--until must be an ISO 8601 time, e.g. 2026-11-25T14:00:00Z, not "never"');
    expect(await usage(['--agent', 'alice', '--since', since, '--endpoint', 'casket:9000'])).toBe('--endpoint must be a URL, e.g. http://127.0.0.1:9000, not "casket:9000"');
    // Nothing was sent: alice's writes are there.
    expect((await content(person, bucket, 'docs/a'))?.body.toString()).toBe('docs/a after');
  });

  it('takes --flag=value, the environment, --until, --bucket and --prefix, and sends them all', async () => {
    const until = new Date(Date.now() + 60_000).toISOString();
    const dry = await run([`--agent=alice`, `--since=${since}`, '--until', until, '--bucket', bucket, '--prefix=docs/', '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout.endsWith('}\n')).toBe(true);
    expect(JSON.parse(dry.stdout)).toMatchObject({ agent: 'alice', since, until, dryRun: true, restored: [{ key: 'docs/a', action: 'put' }] });
    const elsewhere = await run(['--agent', 'alice', '--since', since, '--bucket', 'no-such-bucket', '--dry-run', '--json']);
    expect(JSON.parse(elsewhere.stdout)).toMatchObject({ restored: [], unrecoverable: [] });
    const done = await run(['--agent', 'alice', '--since', since, '--bucket', bucket, '--prefix', 'docs/']);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain('restored 1:\n  put    s3://command/docs/a ');
    expect((await content(person, bucket, 'docs/a'))?.body.toString()).toBe('docs/a before');
    expect((await content(person, bucket, 'src/b'))?.body.toString()).toBe('src/b after');
  });

  it('a casket it cannot reach or that refuses: exit 1 and the reason on stderr', async () => {
    const args = ['--agent', 'alice', '--since', since];
    const refused = await run(args, { ...env, CASKET_ROLLBACK_SECRET_KEY: 'not-the-secret' });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(/^casket rollback: HTTP 403 SignatureDoesNotMatch: \S.*\n$/);
    const nobody = await run(args, { ...env, CASKET_ROLLBACK_ENDPOINT: 'http://127.0.0.1:1' });
    expect(nobody).toMatchObject({ code: 1, stdout: '' });
    expect(nobody.stderr).toMatch(/^casket rollback: http:\/\/127\.0\.0\.1:1: \S.*\n$/);
    // A proxy in front of casket answering for it, in HTML: shown as it came.
    const proxy: Server = createServer((_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>'));
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const html = await run(args, { ...env, CASKET_ROLLBACK_ENDPOINT: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
      expect(html).toEqual({ code: 1, stdout: '', stderr: 'casket rollback: HTTP 502 <h1>Bad Gateway</h1>\n' });
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});
