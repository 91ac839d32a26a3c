/**
 * A restore is a compare-and-swap on the agent's last version
 * (src/rollback/restore.ts; docs/design.md §10) even when the write log
 * cannot see the other writer: a write made behind casket's back (another
 * client of the same bucket, a lifecycle expiry — here straight to the
 * embedded store) between the plan and the restore leaves no log entry, so
 * only If-Match (the agent overwrote the key) or If-None-Match: * (the agent
 * deleted it) keeps the restore from overwriting it. And under
 * --agent-writes read-stamp, the rollback's own full read is what lets its
 * restore through the guard. In-process casket (helpers/in-process.ts).
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { InProcessCasket } from '../helpers/in-process.js';
import { agentDelete, agentPut, content, keysOf, inProcessWithBucket, postRollback } from './helpers.js';

const bucket = 'behind';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

async function setup(flags: Record<string, string> = {}): Promise<{ c: InProcessCasket; alice: S3Client; person: S3Client }> {
  const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice'], flags);
  return { c, alice: agents.alice!, person };
}

const rollback = postRollback;

/** When the rollback asks retention for the goal's bytes of `key` (the plan is made), run `write` first. */
function between(c: InProcessCasket, key: string, write: () => Promise<unknown>): () => boolean {
  const retainer = c.casket.services.retainer!;
  const get = retainer.get.bind(retainer);
  let stepped = false;
  retainer.get = async (version) => {
    if (!stepped && version.key === key) {
      stepped = true;
      await write();
    }
    return get(version);
  };
  return () => stepped;
}

const text = async (s3: S3Client, key: string) => (await content(s3, bucket, key))?.body.toString() ?? null;

// --guard observe: the guard does not insist that writes be conditional, so the restore's own condition is all there is.
describe('a write behind casket\'s back between plan and restore (--guard observe)', () => {
  it('the key deleted from the bucket after alice overwrote it: a conflict, and it stays deleted', async () => {
    const { c, alice, person } = await setup({ guard: 'observe' });
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'expired', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'expired', 'after');
    const stepped = between(c, 'expired', () => c.casket.services.backend.deleteObject(bucket, 'expired', { condition: { type: 'none' } }));
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(stepped()).toBe(true);
    expect(answer.restored).toEqual([]);
    expect(answer.conflicts).toMatchObject([{ key: 'expired', currentETag: null }]);
    // The log's newest entry for the key is alice's own write, which did not make the current state (absent): no writer is named.
    expect(answer.conflicts[0]).not.toHaveProperty('currentWriter');
    expect(await text(person, 'expired')).toBeNull();
  });

  it('the key alice deleted written again in the bucket: a conflict, and that write stays', async () => {
    const { c, alice, person } = await setup({ guard: 'observe' });
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'recreated', Body: 'before' }));
    const since = new Date().toISOString();
    await agentDelete(alice, bucket, 'recreated');
    const bytes = Buffer.from('written behind casket');
    const stepped = between(c, 'recreated', () =>
      c.casket.services.backend.putObject(bucket, 'recreated', { stream: Readable.from([bytes]), digest: () => ({ sha256: createHash('sha256').update(bytes).digest(), size: bytes.length }) }, { condition: { type: 'none' }, headers: {}, metadata: {} }),
    );
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(stepped()).toBe(true);
    expect(answer.restored).toEqual([]);
    expect(keysOf(answer.conflicts)).toEqual(['recreated']);
    expect(await text(person, 'recreated')).toBe('written behind casket');
  });
});

describe('under --agent-writes read-stamp', () => {
  it('the rollback\'s own full read lets its restore through: the key is restored', async () => {
    const { c, alice, person } = await setup({ agentWrites: 'read-stamp' });
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'stamped', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(alice, bucket, 'stamped', 'after');
    const answer = await rollback(c, { agent: 'alice', since, bucket });
    expect(answer.conflicts).toEqual([]);
    expect(keysOf(answer.restored)).toEqual(['stamped']);
    expect(await text(person, 'stamped')).toBe('before');
  });
});
