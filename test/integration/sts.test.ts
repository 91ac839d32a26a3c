/**
 * Short-lived agent credentials (docs/design.md §7): the JS SDK's STSClient
 * and boto3's STS client mint credentials at casket's own endpoint; requests
 * with them are the named agent's (If-Match still required), narrowed by a
 * session policy and by the caller's own policy; refused after expiry and
 * after revocation; honoured by a second casket sharing the same Redis.
 */
import { CreateBucketCommand, GetObjectCommand, HeadBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { AssumeRoleCommand, STSClient, type Credentials } from '@aws-sdk/client-sts';
import { SignatureV4 } from '@smithy/signature-v4';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { introspect } from '../helpers/agents.js';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { cleanEnv, hasPythonModule, python3 } from '../helpers/cli-tools.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { Sha256 } from '../helpers/sha256.js';
import { need } from '../helpers/tools.js';

const bucket = 'sts';
const ALICE = 'arn:casket:iam::agent/alice';

const ORCHESTRATOR_POLICY = {
  Statement: [
    { Effect: 'Allow', Action: 'sts:AssumeRole', Resource: 'arn:casket:iam::agent/*' },
    { Effect: 'Allow', Action: 's3:*', Resource: `arn:aws:s3:::${bucket}/agents/*` },
  ],
};

let casket: RunningCasket;
let admin: S3Client;
const clients: Array<{ destroy(): void }> = [];

function sts(cred: Cred): STSClient {
  const client = new STSClient({ endpoint: casket.url, region: 'us-east-1', credentials: cred, maxAttempts: 1 });
  clients.push(client);
  return client;
}

function s3As(c: Credentials, url = casket.url): S3Client {
  const client = sdk(url, { accessKeyId: c.AccessKeyId!, secretAccessKey: c.SecretAccessKey!, sessionToken: c.SessionToken! } as Cred);
  clients.push(client);
  return client;
}

async function mint(cred: Cred, input: { RoleArn?: string; DurationSeconds?: number; Policy?: string } = {}): Promise<Credentials> {
  const out = await sts(cred).send(new AssumeRoleCommand({ RoleArn: ALICE, RoleSessionName: 'run-1', DurationSeconds: 900, ...input }));
  return out.Credentials!;
}

beforeAll(async () => {
  casket = await startCasket({ args: ['--sts-min-duration', '1'], keys: { orchestrator: { policy: ORCHESTRATOR_POLICY }, plain: { policy: { Statement: [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }] } } } });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  for (const c of [admin, ...clients]) c?.destroy();
  await casket?.stop();
});

describe('AssumeRole with the JS SDK', () => {
  it('answers as STS does and the credentials write as the agent, conditionally', async () => {
    const before = Date.now();
    const out = await sts(casket.admin).send(new AssumeRoleCommand({ RoleArn: ALICE, RoleSessionName: 'run-1', DurationSeconds: 1800 }));
    const c = out.Credentials!;
    expect(c.AccessKeyId).toMatch(/^ASIA[A-Z2-7]{16}$/);
    expect(c.SessionToken!.length).toBeGreaterThan(32);
    expect(Math.abs(c.Expiration!.getTime() - (before + 1_800_000))).toBeLessThan(60_000);
    expect(out.AssumedRoleUser?.Arn).toBe('arn:casket:sts::assumed-role/agent/alice/run-1');

    const alice = s3As(c);
    // An agent's write must be conditional.
    expect((await failure(alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'agents/alice/a.txt', Body: 'one' })))).status).toBe(428);
    const put = await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'agents/alice/a.txt', Body: 'one', IfNoneMatch: '*' }));
    await alice.send(new PutObjectCommand({ Bucket: bucket, Key: 'agents/alice/a.txt', Body: 'two', IfMatch: put.ETag }));
    const writes = await introspect(casket.url, casket.admin, `/_casket/writes?bucket=${bucket}&key=agents/alice/a.txt`);
    expect(writes.body.writes.map((w: { agent: string; accessKey: string }) => [w.agent, w.accessKey])).toEqual([
      ['alice', c.AccessKeyId],
      ['alice', c.AccessKeyId],
    ]);
  });

  it('a presigned URL made with the credentials works (X-Amz-Security-Token in the query)', async () => {
    const c = await mint(casket.admin);
    const u = new URL(casket.url);
    // As @aws-sdk/s3-request-presigner presigns: the payload declared unsigned, hoisted into the query.
    const signer = new SignatureV4({ credentials: { accessKeyId: c.AccessKeyId!, secretAccessKey: c.SecretAccessKey!, sessionToken: c.SessionToken! }, region: 'us-east-1', service: 's3', sha256: Sha256 as never, uriEscapePath: false });
    const presigned = await signer.presign({ method: 'GET', protocol: 'http:', hostname: u.hostname, port: Number(u.port), path: `/${bucket}/agents/alice/a.txt`, headers: { host: u.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } }, { expiresIn: 300 });
    expect(presigned.query?.['X-Amz-Security-Token']).toBe(c.SessionToken);
    const query = new URLSearchParams(presigned.query as Record<string, string>).toString();
    const res = await fetch(`${casket.url}/${bucket}/agents/alice/a.txt?${query}`);
    expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: 'two' });
  });

  it('a request without the session token is refused: the key alone is unknown', async () => {
    const c = await mint(casket.admin);
    const tokenless = sdk(casket.url, { accessKeyId: c.AccessKeyId!, secretAccessKey: c.SecretAccessKey! });
    clients.push(tokenless);
    expect((await failure(tokenless.send(new HeadBucketCommand({ Bucket: bucket })))).status).toBe(403);
    const forged = s3As({ ...c, SessionToken: `${c.SessionToken!.slice(0, -4)}AAAA` });
    expect((await failure(forged.send(new GetObjectCommand({ Bucket: bucket, Key: 'agents/alice/a.txt' })))).name).toBe('InvalidToken');
  });

  it('a session policy narrows the credential', async () => {
    const readOnly = JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: `arn:aws:s3:::${bucket}/*` }] });
    const reader = s3As(await mint(casket.admin, { Policy: readOnly }));
    expect((await bytes((await reader.send(new GetObjectCommand({ Bucket: bucket, Key: 'agents/alice/a.txt' }))).Body)).toString()).toBe('two');
    const f = await failure(reader.send(new PutObjectCommand({ Bucket: bucket, Key: 'agents/alice/b.txt', Body: 'x', IfNoneMatch: '*' })));
    expect({ name: f.name, status: f.status }).toEqual({ name: 'AccessDenied', status: 403 });
  });

  it("a key allowed sts:AssumeRole mints within its own rights; a key without it is refused", async () => {
    const minted = s3As(await mint(casket.keys.orchestrator!));
    await minted.send(new PutObjectCommand({ Bucket: bucket, Key: 'agents/alice/c.txt', Body: 'x', IfNoneMatch: '*' }));
    expect((await failure(minted.send(new PutObjectCommand({ Bucket: bucket, Key: 'top.txt', Body: 'x', IfNoneMatch: '*' })))).status).toBe(403);
    const refused = await failure(mint(casket.keys.plain!));
    expect({ name: refused.name, status: refused.status }).toEqual({ name: 'AccessDenied', status: 403 });
    // Counted when the response is over, which the client may see first: poll.
    const counted = async () => /casket_access_denied_total\{reason="no-allow",action="sts:AssumeRole"\} 1/.test(await (await fetch(`${casket.url}/_casket/metrics`)).text());
    await until(counted, 'the sts:AssumeRole refusal counted');
  });

  it('refuses what STS refuses: a RoleArn that names no agent, a duration out of range, a malformed policy', async () => {
    expect((await failure(mint(casket.admin, { RoleArn: 'arn:aws:iam::123456789012:role/x' }))).name).toBe('ValidationError');
    expect((await failure(mint(casket.admin, { DurationSeconds: 43_201 }))).name).toBe('ValidationError');
    // The SDK knows the code: it surfaces as its modeled exception.
    expect((await failure(mint(casket.admin, { Policy: '{"Statement":[{"Effect":"Allow","NotAction":"s3:*","Resource":"*"}]}' }))).name).toBe('MalformedPolicyDocumentException');
  });

  it('refuses the credentials once they expire: 403 ExpiredToken', async () => {
    const c = await mint(casket.admin, { DurationSeconds: 10 });
    const alice = s3As(c);
    let last: { name: string; status: number | undefined } | undefined;
    await until(async () => {
      try {
        await alice.send(new HeadBucketCommand({ Bucket: bucket }));
        return false;
      } catch (e) {
        const err = e as { name: string; $metadata?: { httpStatusCode?: number } };
        last = { name: err.name, status: err.$metadata?.httpStatusCode };
        return true;
      }
    }, 'the session to expire', 40_000);
    expect(Date.now()).toBeGreaterThanOrEqual(c.Expiration!.getTime());
    const f = await failure(alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'agents/alice/a.txt' })));
    expect({ name: f.name, status: f.status }).toEqual({ name: 'ExpiredToken', status: 403 });
    expect(last?.status).toBe(403);
  });

  it('refuses them once the admin revokes them', async () => {
    const c = await mint(casket.admin);
    const alice = s3As(c);
    await alice.send(new HeadBucketCommand({ Bucket: bucket }));
    const path = `/_casket/sessions/${c.AccessKeyId}`;
    expect((await raw(casket.url, casket.keys.orchestrator!, { method: 'DELETE', path })).status).toBe(403);
    const r = await raw(casket.url, casket.admin, { method: 'DELETE', path });
    expect({ status: r.status, body: JSON.parse(r.body) }).toEqual({ status: 200, body: { accessKeyId: c.AccessKeyId, revoked: true } });
    const f = await failure(alice.send(new GetObjectCommand({ Bucket: bucket, Key: 'agents/alice/a.txt' })));
    expect({ name: f.name, status: f.status }).toEqual({ name: 'AccessDenied', status: 403 });
    expect((await raw(casket.url, casket.admin, { method: 'DELETE', path: '/_casket/sessions/ASIANEVERMINTED0000' })).status).toBe(404);
  });
});

const haveBoto3 = need('boto3 (python3)', hasPythonModule('boto3'));

/** boto3's STS client (the admin key) and an S3 client for minted credentials, then the job. */
const BOTO3_PRELUDE = `
import json, os, time, boto3
from botocore.config import Config
from botocore.exceptions import ClientError
url = os.environ['CASKET_URL']
bucket = '${bucket}'
sts = boto3.client('sts', endpoint_url=url, region_name='us-east-1',
                   aws_access_key_id=os.environ['AK'], aws_secret_access_key=os.environ['SK'])
def s3_with(c):
    return boto3.client('s3', endpoint_url=url, region_name='us-east-1',
                        aws_access_key_id=c['AccessKeyId'], aws_secret_access_key=c['SecretAccessKey'], aws_session_token=c['SessionToken'],
                        config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
def refusal(call):
    """None when the call succeeds; the S3 error code and status when it is refused."""
    try:
        call()
        return None
    except ClientError as e:
        return {'code': e.response['Error'].get('Code'), 'status': e.response['ResponseMetadata']['HTTPStatusCode']}
`;

/** Runs BOTO3_PRELUDE then `job` in python; `job` prints one JSON line last. */
function boto3Job<T>(job: string, env: Record<string, string> = {}): T {
  const stdout = execFileSync(python3(), ['-c', BOTO3_PRELUDE + job], {
    env: cleanEnv({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null', CASKET_URL: casket.url, AK: casket.admin.accessKeyId, SK: casket.admin.secretAccessKey, ...env }),
    encoding: 'utf8',
    timeout: 120_000,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as T;
}

type Refused = { code: string; status: number } | null;

describe.runIf(haveBoto3)('AssumeRole with boto3', () => {
  it('mints at casket and writes as the agent with If-None-Match / If-Match', () => {
    const out = boto3Job<{ key: string; unconditional: Refused; second: string }>(`
c = sts.assume_role(RoleArn='arn:casket:iam::agent/bob', RoleSessionName='boto-run', DurationSeconds=900)['Credentials']
s3 = s3_with(c)
out = {'key': c['AccessKeyId']}
out['unconditional'] = refusal(lambda: s3.put_object(Bucket=bucket, Key='agents/bob/b.txt', Body=b'one'))
etag = s3.put_object(Bucket=bucket, Key='agents/bob/b.txt', Body=b'one', IfNoneMatch='*')['ETag']
out['second'] = s3.put_object(Bucket=bucket, Key='agents/bob/b.txt', Body=b'two', IfMatch=etag)['ETag']
print(json.dumps(out))
`);
    expect(out.key).toMatch(/^ASIA/);
    expect(out.unconditional).toEqual({ code: 'PreconditionRequired', status: 428 });
    expect(out.second).toMatch(/^"[0-9a-f]{64}"$/);
  });

  it('a short DurationSeconds: boto3 is refused with 403 ExpiredToken once it passes', () => {
    // boto3 checks DurationSeconds >= 900 itself: below that (--sts-min-duration)
    // its STS client needs parameter_validation=False. Then polls (every 50 ms,
    // 40 s at most) until casket refuses the credential.
    const out = boto3Job<{ first: Refused; refused: Refused; refusedAt: number; expiration: number; after: Refused }>(`
unvalidated = boto3.client('sts', endpoint_url=url, region_name='us-east-1', config=Config(parameter_validation=False),
                           aws_access_key_id=os.environ['AK'], aws_secret_access_key=os.environ['SK'])
c = unvalidated.assume_role(RoleArn='arn:casket:iam::agent/bob', RoleSessionName='boto-short', DurationSeconds=6)['Credentials']
s3 = s3_with(c)
list_bob = lambda: s3.list_objects_v2(Bucket=bucket, Prefix='agents/bob/')
first = refusal(list_bob)
deadline = time.time() + 40
refused = None
while refused is None and time.time() < deadline:
    time.sleep(0.05)
    refused = refusal(list_bob)
refused_at = time.time()
after = refusal(lambda: s3.get_object(Bucket=bucket, Key='agents/bob/b.txt'))
print(json.dumps({'first': first, 'refused': refused, 'refusedAt': refused_at, 'expiration': c['Expiration'].timestamp(), 'after': after}))
`);
    expect(out.first, 'the credential works before it expires').toBeNull();
    expect(out.refused).toEqual({ code: 'ExpiredToken', status: 403 });
    expect(out.refusedAt).toBeGreaterThanOrEqual(out.expiration);
    expect(out.after).toEqual({ code: 'ExpiredToken', status: 403 });
  });

  it('boto3 is refused once the admin revokes the credential', async () => {
    const minted = boto3Job<{ credentials: { AccessKeyId: string; SecretAccessKey: string; SessionToken: string }; before: Refused }>(`
c = sts.assume_role(RoleArn='arn:casket:iam::agent/bob', RoleSessionName='boto-revoked', DurationSeconds=900)['Credentials']
before = refusal(lambda: s3_with(c).list_objects_v2(Bucket=bucket, Prefix='agents/bob/'))
print(json.dumps({'credentials': {k: c[k] for k in ('AccessKeyId', 'SecretAccessKey', 'SessionToken')}, 'before': before}))
`);
    expect(minted.before, 'the credential works before it is revoked').toBeNull();
    const r = await raw(casket.url, casket.admin, { method: 'DELETE', path: `/_casket/sessions/${minted.credentials.AccessKeyId}` });
    expect({ status: r.status, body: JSON.parse(r.body) }).toEqual({ status: 200, body: { accessKeyId: minted.credentials.AccessKeyId, revoked: true } });
    const after = boto3Job<{ list: Refused; get: Refused; put: Refused }>(`
s3 = s3_with(json.loads(os.environ['MINTED']))
print(json.dumps({
    'list': refusal(lambda: s3.list_objects_v2(Bucket=bucket, Prefix='agents/bob/')),
    'get': refusal(lambda: s3.get_object(Bucket=bucket, Key='agents/bob/b.txt')),
    'put': refusal(lambda: s3.put_object(Bucket=bucket, Key='agents/bob/revoked.txt', Body=b'x', IfNoneMatch='*')),
}))
`, { MINTED: JSON.stringify(minted.credentials) });
    expect(after).toEqual({ list: { code: 'AccessDenied', status: 403 }, get: { code: 'AccessDenied', status: 403 }, put: { code: 'AccessDenied', status: 403 } });
  });
});

const haveRedis = need('redis-server', hasRedis());

describe.skipIf(!haveRedis)('two caskets sharing Redis', () => {
  let redis: RunningRedis;
  let one: RunningCasket;
  let two: RunningCasket;
  beforeAll(async () => {
    redis = await startRedis();
    const args = ['--state', 'redis', '--redis-url', redis.url];
    [one, two] = await Promise.all([startCasket({ args }), startCasket({ args })]);
  });
  afterAll(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
    await redis?.stop();
  });

  it('honour each other’s minted credentials and revocations', async () => {
    const stsOne = new STSClient({ endpoint: one.url, region: 'us-east-1', credentials: one.admin, maxAttempts: 1 });
    clients.push(stsOne);
    const c = (await stsOne.send(new AssumeRoleCommand({ RoleArn: ALICE, RoleSessionName: 'replica', DurationSeconds: 900 }))).Credentials!;
    const adminTwo = sdk(two.url, two.admin);
    clients.push(adminTwo);
    await adminTwo.send(new CreateBucketCommand({ Bucket: 'sts-two' }));
    const onTwo = s3As(c, two.url);
    await onTwo.send(new PutObjectCommand({ Bucket: 'sts-two', Key: 'agents/alice/x', Body: 'x', IfNoneMatch: '*' }));
    const writes = await introspect(two.url, two.admin, '/_casket/writes?bucket=sts-two');
    expect(writes.body.writes[0]).toMatchObject({ agent: 'alice', accessKey: c.AccessKeyId });
    expect((await raw(one.url, one.admin, { method: 'DELETE', path: `/_casket/sessions/${c.AccessKeyId}` })).status).toBe(200);
    expect((await failure(onTwo.send(new HeadBucketCommand({ Bucket: 'sts-two' })))).status).toBe(403);
  });
});
