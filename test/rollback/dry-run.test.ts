/**
 * A dry run answers what the run would (src/rollback/apply.ts): a key
 * someone else wrote since alice — other bytes, or her very bytes again —
 * is a conflict there too, not a restore the run's compare-and-swap would
 * later refuse; and it reads as nobody, a retried read too (no read stamp
 * for the rollback agent, docs/design.md §4). docs/design.md §10.
 * In-process casket (helpers/in-process.ts).
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { raw } from '../helpers/raw.js';
import { S3Error } from '../../src/vocabulary/errors.js';
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

  it('reports a key written since as a conflict when the write log cannot say who wrote it last (the state store failing that read)', async () => {
    // The current version alone decides then (apply.ts): the run's compare-and-swap would refuse the restore, so the dry run must not promise it.
    const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice']);
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'unlogged', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(agents.alice!, bucket, 'unlogged', 'alice');
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'unlogged', Body: 'the person' }));
    const state = c.casket.services.state;
    const lastWrite = state.lastWrite.bind(state);
    state.lastWrite = () => Promise.reject(new Error('the state store is down (test)'));
    try {
      const answer = await postRollback(c, { agent: 'alice', since, bucket, dryRun: true });
      expect(keysOf(answer.conflicts)).toEqual(['unlogged']);
      expect(answer.restored).toEqual([]);
    } finally {
      state.lastWrite = lastWrite;
    }
  });

  it('leaves the rollback agent no read stamp even when its read of a key is retried (the backend failed it once)', async () => {
    const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice']);
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'flaky', Body: 'before' }));
    const since = new Date().toISOString();
    await agentPut(agents.alice!, bucket, 'flaky', 'after');
    const backend = c.casket.services.backend;
    const getObject = backend.getObject.bind(backend);
    let reads = 0;
    backend.getObject = async (b, k, v) => (k === 'flaky' && reads++ === 0 ? Promise.reject(new S3Error('InternalError')) : getObject(b, k, v));
    try {
      const answer = await postRollback(c, { agent: 'alice', since, bucket, dryRun: true });
      expect(keysOf(answer.restored)).toEqual(['flaky']);
    } finally {
      backend.getObject = getObject;
    }
    expect(reads).toBe(2); // the first failed, the retry answered
    const stamps = await raw(c.url, c.admin, { method: 'GET', path: `/_casket/agents/${encodeURIComponent('rollback:alice')}/stamps` });
    expect(stamps.status).toBe(200);
    expect(stamps.body).not.toContain('flaky');
  });
});
