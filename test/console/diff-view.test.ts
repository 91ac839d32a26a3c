/**
 * The console's diff view (GET /_casket/console/api/diff, src/console/routes.ts)
 * answers a refusal of /_casket/diff that is not an S3 error as JSON, with
 * its status: a version casket did not retain is 404 NoSuchVersion
 * (src/agent-changes.ts), which the page shows in words. Casket in this
 * process; the diff itself and the S3 errors are in routes.test.ts.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { consoleLogin } from './login.js';

let c: InProcessCasket;
beforeAll(async () => {
  c = await startInProcess();
});
afterAll(async () => {
  await c?.stop();
});

describe('console diff view', () => {
  it('answers a version casket did not retain 404 NoSuchVersion, as JSON', async () => {
    const admin = sdk(c.url, c.admin);
    await admin.send(new CreateBucketCommand({ Bucket: 'diffs' }));
    await admin.send(new PutObjectCommand({ Bucket: 'diffs', Key: 'n.txt', Body: 'one\n' }));
    admin.destroy();
    const from = '"0123456789abcdef0123456789abcdef"';
    const res = await fetch(`${c.url}/_casket/console/api/diff?${new URLSearchParams({ bucket: 'diffs', key: 'n.txt', from })}`, { headers: { cookie: await consoleLogin(c.url, c.admin) } });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('NoSuchVersion');
    expect(body.message).toContain('0123456789abcdef0123456789abcdef');
  });
});
