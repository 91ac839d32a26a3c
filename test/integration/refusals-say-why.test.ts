/**
 * Refusals that say what to fix (issue 41, found 10): InvalidBucketName names
 * the AWS naming rule broken; a minted STS key signed without its session
 * token is told to send it; a /_casket/events request signed without
 * x-amz-content-sha256 is told that header is missing, not to "sign the
 * request".
 */
import { CreateBucketCommand, ListBucketsCommand } from '@aws-sdk/client-s3';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { failure, sdk } from '../helpers/clients.js';
import { raw, send, signer } from '../helpers/raw.js';

let casket: RunningCasket;

beforeAll(async () => {
  casket = await startCasket({ agents: ['alice'] });
});
afterAll(async () => {
  await casket?.stop();
});

it('InvalidBucketName says which rule the name breaks', async () => {
  const cases: [string, RegExp][] = [
    ['My-Bucket', /must not contain capital letters/],
    ['ab', /at least 3 characters long; this one has 2/],
    [`b${'x'.repeat(63)}`, /at most 63 characters long; this one has 64/],
    ['under_score', /&quot;_&quot; is not/],
    ['192.168.5.4', /must not be formatted as an IP address/],
    ['double..dot', /two adjacent periods/],
    ['-leading', /must begin and end with a lowercase letter or a digit/],
    ['xn--punycode', /reserved prefix xn--/],
  ];
  for (const [name, why] of cases) {
    const r = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${name}` });
    expect(r.status, name).toBe(400);
    expect(r.body, name).toContain('<Code>InvalidBucketName</Code>');
    expect(r.body, name).toMatch(why);
    expect(r.body).toContain('bucketnamingrules.html');
  }
});

it('a minted STS key used without its session token is told to send it', async () => {
  const client = new STSClient({ endpoint: casket.url, region: 'us-east-1', credentials: casket.admin, maxAttempts: 1 });
  const { Credentials: minted } = await client.send(new AssumeRoleCommand({ RoleArn: 'arn:casket:iam::agent/alice', RoleSessionName: 'hint', DurationSeconds: 900 }));
  client.destroy();
  const withToken = sdk(casket.url, { accessKeyId: minted!.AccessKeyId!, secretAccessKey: minted!.SecretAccessKey!, sessionToken: minted!.SessionToken! } as never);
  await withToken.send(new ListBucketsCommand({}));
  const without = await failure(sdk(casket.url, { accessKeyId: minted!.AccessKeyId!, secretAccessKey: minted!.SecretAccessKey! }).send(new CreateBucketCommand({ Bucket: 'hint' })));
  expect([without.status, without.name]).toEqual([403, 'InvalidAccessKeyId']);
  expect(without.error.message).toMatch(/temporary credential: send its session token in x-amz-security-token/);
  // A key casket never issued keeps AWS's plain words.
  const unknown = await failure(sdk(casket.url, { accessKeyId: 'ASIAUNKNOWNUNKNOWN12', secretAccessKey: 'x' }).send(new ListBucketsCommand({})));
  expect(unknown.name).toBe('InvalidAccessKeyId');
  expect(unknown.error.message).not.toMatch(/session token/);
});

it('/_casket/events signed by an admin key without x-amz-content-sha256 names that header', async () => {
  const u = new URL(casket.url);
  const signed = await signer(casket.admin).sign(
    { method: 'GET', protocol: 'http:', hostname: u.hostname, port: Number(u.port), path: '/_casket/events', query: {}, headers: { host: u.host } },
    { signingDate: new Date() },
  );
  expect(Object.keys(signed.headers).map((h) => h.toLowerCase())).not.toContain('x-amz-content-sha256');
  const r = await send(casket.url, 'GET', '/_casket/events', signed.headers as Record<string, string>);
  expect(r.status).toBe(403);
  const body = JSON.parse(r.body) as { error: string; message: string };
  expect(body.error).toBe('AccessDenied');
  expect(body.message).toMatch(/x-amz-content-sha256/);
  expect(body.message).not.toMatch(/sign the request/);
  // Not an admin key: said so.
  const agent = await signer(casket.agents.alice!).sign(
    { method: 'GET', protocol: 'http:', hostname: u.hostname, port: Number(u.port), path: '/_casket/events', query: {}, headers: { host: u.host, 'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' } },
    { signingDate: new Date() },
  );
  const notAdmin = JSON.parse((await send(casket.url, 'GET', '/_casket/events', agent.headers as Record<string, string>)).body) as { message: string };
  expect(notAdmin.message).toMatch(/is not an admin key/);
});
