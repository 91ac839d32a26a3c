/**
 * A rollback restores through the same S3 handling as a request from the
 * wire (src/rollback/door.ts, src/s3/in-process.ts), path style: its Host
 * must not read as a virtual-hosted bucket under any `--domain`
 * (src/s3/addressing.ts) — with `--domain rollback`, a Host of
 * `casket.rollback` would have sent every restore to a bucket named
 * `casket`. In-process, so `npm run mutate:rooms` sees it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { agentPut, content, inProcessWithBucket, postRollback } from './helpers.js';

const bucket = 'domain';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

describe('rollback under --domain', () => {
  it('restores the agent\'s key in its own bucket whatever domain casket serves', async () => {
    const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice'], { domain: 'rollback' });
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes/a.md', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(agents.alice!, bucket, 'notes/a.md', 'after');

    const answer = await postRollback(c, { agent: 'alice', since, bucket });
    expect(answer).toMatchObject({ restored: [{ key: 'notes/a.md', action: 'put' }], conflicts: [] });
    expect(await content(person, bucket, 'notes/a.md')).toMatchObject({ body: Buffer.from('before') });
  });
});
