/**
 * A dry run answers what the run would (src/rollback/apply.ts): a key
 * someone else wrote since alice — other bytes, or her very bytes again —
 * is a conflict there too, not a restore the run's compare-and-swap would
 * later refuse. docs/design.md §10. In-process casket (helpers/in-process.ts).
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { agentPut, inProcessWithBucket, keysOf, postRollback } from './helpers.js';

const bucket = 'dry-run';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

describe('a dry run', () => {
  it('reports a key written since by a person as a conflict, whether with other bytes or alice\'s again', async () => {
    const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice']);
    for (const k of ['other', 'same', 'mine']) await person.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: `${k}: before` }));
    const since = new Date().toISOString();
    for (const k of ['other', 'same', 'mine']) await agentPut(agents.alice!, bucket, k, `${k}: alice`);
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'other', Body: 'other: the person' }));
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'same', Body: 'same: alice' }));
    const answer = await postRollback(c, { agent: 'alice', since, bucket, dryRun: true });
    expect(keysOf(answer.conflicts)).toEqual(['other', 'same']);
    expect(keysOf(answer.restored)).toEqual(['mine']);
  });
});
