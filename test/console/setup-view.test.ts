/**
 * The console's setup view (src/console/api.ts setup) of a casket in front
 * of an upstream S3 (here another casket, both in this process): the
 * upstream's URL as the operator wrote it but never its user or password
 * (docs/design.md §9: the console shows no secret), the capabilities casket
 * probed upstream, each credential's policies, and the metrics of access
 * refused and bytes sent, added up by reason.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePolicy, type Policy } from '../../src/auth/policy.js';
import { failure, sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { consoleLogin } from './login.js';

const reader = { accessKeyId: 'AKSETUPREADER', secretAccessKey: 'setup-reader-secret-0123456789' };
let policy: Policy;
let upstream: InProcessCasket;
let c: InProcessCasket;
let withUserinfo: URL;

beforeAll(async () => {
  upstream = await startInProcess();
  withUserinfo = new URL(upstream.url);
  withUserinfo.username = 'operator';
  withUserinfo.password = 'upstream-password-never-shown';
  policy = parsePolicy({ Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: 'arn:aws:s3:::open/*' }] });
  c = await startInProcess({
    flags: { upstream: withUserinfo.toString(), upstreamAccessKey: upstream.admin.accessKeyId, upstreamSecretKey: upstream.admin.secretAccessKey },
    credentials: [{ ...reader, policies: [policy] }],
  });
});
afterAll(async () => {
  await c?.stop();
  await upstream?.stop();
});

interface Setup {
  setup: Record<string, unknown>;
  capabilities: Record<string, unknown> | null;
  credentials: Array<{ accessKeyId: string; policies: unknown[] }>;
  metrics: { accessDenied: { total: number; by: Record<string, number> }; bytesSent: { total: number; by?: unknown } };
}

describe('console setup view, in front of an upstream', () => {
  it('names the upstream without its user or password, shows its probed capabilities, the policies, and access refused by reason', async () => {
    const admin: S3Client = sdk(c.url, c.admin);
    const s3: S3Client = sdk(c.url, reader);
    await admin.send(new CreateBucketCommand({ Bucket: 'open' }));
    await admin.send(new PutObjectCommand({ Bucket: 'open', Key: 'a.txt', Body: 'readable\n' }));
    expect(await (await s3.send(new GetObjectCommand({ Bucket: 'open', Key: 'a.txt' }))).Body!.transformToString()).toBe('readable\n');
    expect((await failure(s3.send(new PutObjectCommand({ Bucket: 'open', Key: 'b.txt', Body: 'no' })))).status).toBe(403);
    admin.destroy();
    s3.destroy();

    const res = await fetch(`${c.url}/_casket/console/api/setup`, { headers: { cookie: await consoleLogin(c.url, c.admin) } });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).not.toContain('upstream-password-never-shown');
    expect(body).not.toContain('operator@');
    const view = JSON.parse(body) as Setup;
    expect(view.setup).toMatchObject({ backend: 'upstream', upstream: upstream.url });
    expect(view.capabilities).toMatchObject({ ifNoneMatchPut: true, ifMatchDelete: true });
    expect(view.credentials.find((k) => k.accessKeyId === reader.accessKeyId)!.policies).toEqual([JSON.parse(JSON.stringify(policy))]);
    // One request refused by the reader's policy (no statement allows a PUT), and at least the object's bytes sent.
    expect(view.metrics.accessDenied).toEqual({ total: 1, by: { 'no-allow': 1 } });
    expect(view.metrics.bytesSent.total).toBeGreaterThanOrEqual('readable\n'.length);
    expect(view.metrics.bytesSent.by).toBeUndefined();
  });

  it('answers while the upstream cannot be reached: no capabilities, and readiness says why', async () => {
    const down = await startInProcess({ flags: { upstream: 'http://127.0.0.1:9', upstreamAccessKey: 'AKDOWN', upstreamSecretKey: 'down-secret' } });
    try {
      const res = await fetch(`${down.url}/_casket/console/api/setup`, { headers: { cookie: await consoleLogin(down.url, down.admin) } });
      expect(res.status).toBe(200);
      const view = (await res.json()) as Setup & { readiness: { status: string } };
      expect(view.capabilities).toBeNull();
      expect(view.readiness).toMatchObject({ status: 'unavailable', checks: { backend: { ok: false, error: 'ECONNREFUSED' } } });
    } finally {
      await down.stop();
    }
  });
});
