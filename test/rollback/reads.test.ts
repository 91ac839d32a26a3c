/**
 * How often a rollback reads a key from the backend (src/rollback/apply.ts,
 * readCurrent): once, when the read succeeds. A read the backend fails (5xx)
 * is retried as SDKs retry one (edges.test.ts); one that succeeds is not
 * made again: each GET is a request the bucket's owner pays for
 * (https://aws.amazon.com/s3/pricing/, "Requests & data retrievals").
 * In-process casket (helpers/in-process.ts).
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { agentDelete, agentPut, inProcessWithBucket, keysOf, postRollback } from './helpers.js';

const bucket = 'reads';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

describe('a rollback\'s reads', () => {
  it('reads each key once when the backend answers, found or not found', async () => {
    const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice']);
    const alice = agents.alice!;
    for (const k of ['edited', 'removed']) await person.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: `${k}: before` }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'edited', 'edited: alice');
    await agentDelete(alice, bucket, 'removed');
    const backend = c.casket.services.backend;
    const getObject = backend.getObject.bind(backend);
    const reads: string[] = [];
    backend.getObject = async (b, k, v) => {
      reads.push(k);
      return getObject(b, k, v);
    };
    try {
      const answer = await postRollback(c, { agent: 'alice', since, bucket, dryRun: true });
      expect(keysOf(answer.restored)).toEqual(['edited', 'removed']);
    } finally {
      backend.getObject = getObject;
    }
    expect(reads.sort()).toEqual(['edited', 'removed']);
  });
});
