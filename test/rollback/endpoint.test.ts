/**
 * `POST /_casket/rollback` refuses, before it reads or writes anything, a
 * request it cannot trust or take (src/rollback/endpoint.ts, docs/design.md
 * §10), each with the error a client can act on: unsigned or not an admin's
 * (403 AccessDenied), no Content-Length (411 MissingContentLength, as S3
 * answers a PUT without one), a body over 64 KiB (400 InvalidRequest), a
 * body other than the one signed or an unsigned payload (400
 * XAmzContentSHA256Mismatch). In-process, so `npm run mutate:rooms` sees it.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { raw, sha256hex, type RawRequest } from '../helpers/raw.js';
import type { RollbackAnswer } from '../../src/rollback/plan.js';
import { agentPut, content, inProcessWithBucket } from './helpers.js';

const bucket = 'endpoint';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

describe('POST /_casket/rollback', () => {
  it('refuses what it cannot trust or take with the error to act on, and writes nothing', async () => {
    const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice']);
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(agents.alice!, bucket, 'k', 'after');
    const request = JSON.stringify({ agent: 'alice', since, bucket });
    const post = async (r: Partial<RawRequest>, cred = c.admin) => {
      const res = await raw(c.url, cred, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: request, ...r });
      return { status: res.status, ...(JSON.parse(res.body) as { error?: string; message?: string }) };
    };

    expect(await post({ unsigned: true })).toEqual({ status: 403, error: 'AccessDenied', message: 'Sign rollback requests with an admin access key.' });
    expect(await post({}, c.agents.alice!)).toEqual({ status: 403, error: 'AccessDenied', message: 'Rollback needs an admin access key.' });
    expect(await post({ headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } })).toEqual({
      status: 411,
      error: 'MissingContentLength',
      message: 'Send the rollback request with a Content-Length.',
    });
    const tooLarge = { status: 400, error: 'InvalidRequest', message: 'The rollback request is too large.' };
    expect(await post({ body: request.padEnd(64 * 1024 + 1) })).toEqual(tooLarge);
    const mismatch = { status: 400, error: 'XAmzContentSHA256Mismatch', message: 'Sign the rollback request with the SHA-256 of its body as x-amz-content-sha256.' };
    expect(await post({ payloadHash: sha256hex(JSON.stringify({ agent: 'nobody', since })) })).toEqual(mismatch);
    expect(await post({ payloadHash: 'UNSIGNED-PAYLOAD' })).toEqual(mismatch);
    expect(await content(person, bucket, 'k')).toMatchObject({ body: Buffer.from('after') });

    // 64 KiB exactly is taken: the same request, padded with JSON's spaces.
    const answer = (await post({ body: request.padEnd(64 * 1024) })) as unknown as RollbackAnswer & { status: number };
    expect(answer).toMatchObject({ status: 200, agent: 'alice', restored: [{ key: 'k', action: 'put' }] });
    expect(await content(person, bucket, 'k')).toMatchObject({ body: Buffer.from('before') });
  });
});
