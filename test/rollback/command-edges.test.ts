/**
 * `casket rollback` at its edges (src/rollback/command.ts), beside
 * command.test.ts: an argument that is only `=value`, the exit status when
 * conflicts and unrecoverable keys are as many, and a casket (or a proxy)
 * refusing with a JSON error that has no message; the usage a mistyped
 * option shows; the request as a proxy in front of casket sees it. No casket
 * is needed: a plain HTTP server answers for one.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { exitStatus, rollbackCommand } from '../../src/rollback/command.js';
import { ROLLBACK_PATH, type RollbackAnswer } from '../../src/rollback/plan.js';

async function run(argv: string[], env: Record<string, string>): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const out = { stdout: '', stderr: '' };
  const sink = (to: 'stdout' | 'stderr') => new Writable({ write: (chunk: Buffer, _enc, done) => { out[to] += chunk.toString(); done(); } });
  try {
    return { code: await rollbackCommand(argv, env, { stdout: sink('stdout'), stderr: sink('stderr') }), ...out };
  } catch (e) {
    if ((e as Error).name !== 'UsageError') throw e;
    return { code: 'usage', stdout: out.stdout, stderr: (e as Error).message };
  }
}

describe('casket rollback, at its edges', () => {
  it('an argument that is only "=value" is an unknown option named as it was typed', async () => {
    const r = await run(['=alice'], {});
    expect(r.code).toBe('usage');
    expect(r.stderr.split('\n')[0]).toBe('unknown option =alice');
  });

  it('exits 3 when conflicts and unrecoverable keys are as many (one each)', () => {
    const answer: RollbackAnswer = {
      agent: 'alice', writtenAs: 'rollback:alice', since: '2026-11-25T14:00:00.000Z', dryRun: false, restored: [], unchanged: [],
      conflicts: [{ bucket: 'b', key: 'c', agentETag: '"c1"', currentETag: '"c2"' }],
      unrecoverable: [{ bucket: 'b', key: 'u', goalETag: '"u0"', reason: 'gone' }],
    };
    expect(exitStatus(answer)).toBe(3);
  });

  it('a refusal in JSON without a message: exit 1, the error code and nothing after it', async () => {
    const proxy: Server = createServer((_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"SlowDown"}'));
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const env = { CASKET_ROLLBACK_ENDPOINT: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, CASKET_ROLLBACK_ACCESS_KEY: 'AK', CASKET_ROLLBACK_SECRET_KEY: 'SK' };
      expect(await run(['--agent', 'alice', '--since', '2026-11-25T14:00:00Z'], env)).toEqual({ code: 1, stdout: '', stderr: 'casket rollback: HTTP 503 SlowDown: \n' });
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('a mistyped option shows the usage: both forms, every option, the environment variables and the exit statuses', async () => {
    const r = await run(['--agnet', 'alice'], {});
    expect(r.code).toBe('usage');
    const [first, ...usage] = r.stderr.split('\n');
    expect(first).toBe('unknown option --agnet');
    expect(usage[0]).toBe('usage:');
    const text = usage.join('\n');
    for (const option of ['--endpoint URL', '--access-key K', '--secret-key S', '--agent NAME', '--since TIME', '[--until TIME]', '[--bucket B]', '[--prefix P]', '[--dry-run]', '[--json]', '--changeset ID']) expect(text).toContain(option);
    expect(text).toContain('(env CASKET_ROLLBACK_ENDPOINT, CASKET_ROLLBACK_ACCESS_KEY, CASKET_ROLLBACK_SECRET_KEY)');
    expect(text).toContain('exit status: 0 all keys back, 3 some left (conflicts, unrecoverable), 1 not run, 2 usage');
  });

  it('sends the rollback as one signed POST of JSON, as a proxy in front of casket sees it', async () => {
    const seen: Array<{ method?: string; url?: string; type?: string; auth?: string; body: string }> = [];
    const answer: RollbackAnswer = { agent: 'alice', writtenAs: 'rollback:alice', since: '2026-11-25T14:00:00.000Z', dryRun: true, restored: [], conflicts: [], unrecoverable: [], unchanged: [] };
    const proxy: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
        seen.push({ method: req.method, url: req.url, type: req.headers['content-type'], auth: req.headers.authorization, body: Buffer.concat(chunks).toString() });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const env = { CASKET_ROLLBACK_ENDPOINT: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, CASKET_ROLLBACK_ACCESS_KEY: 'AK', CASKET_ROLLBACK_SECRET_KEY: 'SK' };
      expect((await run(['--agent', 'alice', '--since', '2026-11-25T14:00:00Z', '--dry-run'], env)).code).toBe(0);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: ROLLBACK_PATH, type: 'application/json' });
    expect(seen[0]!.auth).toMatch(/^AWS4-HMAC-SHA256 Credential=AK\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=content-type;host;/);
    expect(JSON.parse(seen[0]!.body)).toEqual({ agent: 'alice', since: '2026-11-25T14:00:00Z', dryRun: true });
  });
});
