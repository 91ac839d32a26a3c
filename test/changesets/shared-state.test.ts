/**
 * Caskets sharing Redis do not yet order changesets against each other (the
 * key gate is one process's, src/changesets/locks.ts): there, a changeset of
 * several keys is refused whole, 501 NotImplemented, rather than landing half
 * when another casket writes one of its keys mid-commit (issue 39). One key
 * is one guarded write, and lands.
 */
import { createHash } from 'node:crypto';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { commit } from '../helpers/changeset.js';
import { bytes, sdk } from '../helpers/clients.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';

const bucket = 'shared';
const quoted = (s: string) => `"${createHash('sha256').update(s).digest('hex')}"`;

describe.runIf(need('redis-server', hasRedis()))('changesets on caskets sharing Redis', () => {
  let redis: RunningRedis;
  let casket: RunningCasket;
  beforeAll(async () => {
    redis = await startRedis();
    casket = await startCasket({ args: ['--state', 'redis', '--redis-url', redis.url] });
    await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
    await sdk(casket.url, casket.admin).send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: 'a1' }));
  });
  afterAll(async () => {
    await casket?.stop();
    await redis?.stop();
  });

  const read = async (key: string) => {
    try {
      return (await bytes((await sdk(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();
    } catch (e) {
      if ((e as { name?: string }).name === 'NoSuchKey') return undefined;
      throw e;
    }
  };

  it('a changeset of several keys is refused whole with 501 and a reason; nothing is written', async () => {
    const r = await commit(casket.url, casket.admin, bucket, [
      { key: 'a.txt', body: 'a2', 'if-match': quoted('a1') },
      { key: 'b.txt', body: 'b1', 'if-none-match': '*' },
    ]);
    expect(r.status).toBe(501);
    expect(JSON.stringify(r.json)).toMatch(/one casket.*--state redis/);
    expect([await read('a.txt'), await read('b.txt')]).toEqual(['a1', undefined]);
  });

  it('a changeset of one key is one guarded write, and lands', async () => {
    const r = await commit(casket.url, casket.admin, bucket, [{ key: 'a.txt', body: 'a3', 'if-match': quoted('a1') }]);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(await read('a.txt')).toBe('a3');
  });
});
