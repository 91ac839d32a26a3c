/**
 * A conflict's diff (src/rollback/apply.ts, conflict) from wherever casket
 * holds the two sides: the agent's version from retention or, with retention
 * off, from the pre-images (--keep-pre-images); the current version read
 * into memory up to the larger of --retain-max-size, --pre-image-max-size and
 * 1 MiB. With neither side's bytes at hand, the conflict still comes, without
 * a diff. docs/design.md §10. In-process casket (helpers/in-process.ts), so
 * `npm run mutate:rooms` sees these tests.
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import type { InProcessCasket } from '../helpers/in-process.js';
import { agentPut, content, inProcessWithBucket, postRollback } from './helpers.js';

const bucket = 'conflict-diff';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

async function setup(flags: Record<string, string>): Promise<{ c: InProcessCasket; alice: S3Client; bob: S3Client; person: S3Client }> {
  const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice', 'bob'], flags);
  return { c, alice: agents.alice!, bob: agents.bob!, person };
}

const text = async (s3: S3Client, key: string) => (await content(s3, bucket, key))?.body.toString() ?? null;

describe('a rollback conflict\'s diff', () => {
  it('with retention off, alice\'s version comes from the pre-image bob\'s overwrite kept', async () => {
    const { c, alice, bob, person } = await setup({ retainMaxSize: '0', keepPreImages: 'true' });
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes.md', Body: 'one\n' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'notes.md', 'one\nalice: two\n');
    await agentPut(bob, bucket, 'notes.md', 'one\nalice: two\nbob: three\n');
    const answer = await postRollback(c, { agent: 'alice', since, bucket });
    expect(answer.restored).toEqual([]);
    expect(answer.conflicts).toMatchObject([{ key: 'notes.md', currentWriter: 'bob' }]);
    expect(answer.conflicts[0]!.diff).toContain(' alice: two\n+bob: three\n');
    expect(await text(person, 'notes.md')).toBe('one\nalice: two\nbob: three\n');
  });

  it('with alice\'s version held nowhere (retention off, no pre-images), the conflict comes without a diff and nothing is written', async () => {
    const { c, alice, person } = await setup({ retainMaxSize: '0' });
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'plain.txt', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'plain.txt', 'alice');
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'plain.txt', Body: 'person' }));
    const answer = await postRollback(c, { agent: 'alice', since, bucket });
    expect(answer.conflicts).toEqual([{ bucket, key: 'plain.txt', agentETag: expect.stringMatching(/^"[0-9a-f]{64}"$/), currentETag: expect.stringMatching(/^"[0-9a-f]{64}"$/), currentWriter: c.keys.person!.accessKeyId }]);
    expect(await text(person, 'plain.txt')).toBe('person');
  });

  it('a current version above 1 MiB but within --retain-max-size is held: the conflict comes with its diff, cut', async () => {
    const { c, alice, person } = await setup({ retainMaxSize: String(2 * 1024 * 1024) });
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'big.txt', Body: 'small\n' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'big.txt', 'alice, small\n');
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'big.txt', Body: 'x'.repeat(1024 * 1024 + 1) }));
    const answer = await postRollback(c, { agent: 'alice', since, bucket });
    expect(answer.conflicts).toMatchObject([{ key: 'big.txt', diffTruncated: true }]);
    expect(answer.conflicts[0]!.diff).toContain('-alice, small\n');
  });
});
