/**
 * The s3 backend's conditional deletes on size and modification time
 * (src/backends/s3/commit.ts), against moto by default and Ceph RGW with
 * CASKET_TEST_UPSTREAM=rgw: a version written around casket is judged by what
 * the upstream holds now; with several replicas a condition the upstream
 * cannot make atomic is refused (501) rather than checked, then applied — a
 * size rides on the upstream's If-Match on DELETE (moto enforces it, RGW 16
 * does not), a modification time never does (the same bytes rewritten keep
 * their ETag).
 */
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createPayload } from '../../../src/auth/payload.js';
import { ConditionFailed, type Payload } from '../../../src/backends/types.js';
import { upstreamSuite } from './upstream-suite.js';

const suite = upstreamSuite();

function payload(data: string): Payload {
  const bytes = Buffer.from(data);
  return createPayload(Readable.from([bytes]), { auth: null, headers: { 'content-length': String(bytes.length) }, md5: false });
}

describe('conditional deletes upstream', () => {
  it('judge the version the upstream holds now, also when it was written around casket', async () => {
    const b = suite.backend();
    await b.createBucket('cd-around');
    const v1 = await b.putObject('cd-around', 'k', payload('v1'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    await suite.direct.send(new PutObjectCommand({ Bucket: 'cd-around', Key: 'k', Body: 'written around casket' }));
    const refused = await b.deleteObject('cd-around', 'k', { condition: { type: 'none', size: v1.size } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConditionFailed);
    expect((refused as ConditionFailed).current?.size).toBe('written around casket'.length);
    await b.deleteObject('cd-around', 'k', { condition: { type: 'none', size: 'written around casket'.length } });
    expect(await b.headObject('cd-around', 'k')).toBeNull();
    // A missing key satisfies them: nothing to delete, no error.
    expect((await b.deleteObject('cd-around', 'k', { condition: { type: 'none', size: 1, lastModified: new Date() } })).replaced).toBeNull();
  });

  it('with replicas: a size goes through the upstream If-Match where it enforces one on DELETE; a time is refused (501)', async () => {
    const b = suite.backend({ replicas: true });
    await b.createBucket('cd-replicas');
    const v1 = await b.putObject('cd-replicas', 'k', payload('v1'), { condition: { type: 'none' }, headers: {}, metadata: {} });
    const timed = b.deleteObject('cd-replicas', 'k', { condition: { type: 'none', lastModified: v1.lastModified } });
    await expect(timed).rejects.toMatchObject({ code: 'NotImplemented', message: expect.stringContaining('x-amz-if-match-last-modified-time') });
    const sized = b.deleteObject('cd-replicas', 'k', { condition: { type: 'none', size: 2 } });
    if (suite.measured.ifMatchDelete) await sized;
    else await expect(sized).rejects.toMatchObject({ code: 'NotImplemented', message: expect.stringContaining('x-amz-if-match-size') });
    const left = await suite.direct.send(new HeadObjectCommand({ Bucket: 'cd-replicas', Key: 'k' })).then(() => true, () => false);
    expect(left).toBe(!suite.measured.ifMatchDelete);
  });
});
