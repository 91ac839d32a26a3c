/**
 * The guarded write (s3/write.ts) in a versioned bucket, with casket in this
 * process: the write log names the version id each write made — the new
 * version, or the delete marker (API_DeleteObject) — as `casket rollback`
 * names versions by it (docs/design.md §10); and a 412 names a person's
 * access key as the current version's writer only when the log's newest
 * entry made that version — not after that person deleted the newest
 * version by its id, uncovering one somebody else wrote.
 */
import { CreateBucketCommand, PutBucketVersioningCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'logged-versions';
let casket: InProcessCasket;
let carol: Cred;

beforeAll(async () => {
  casket = await startInProcess({ keys: ['carol'] });
  carol = casket.keys.carol!;
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
  admin.destroy();
});
afterAll(async () => {
  await casket?.stop();
});

const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body });
const del = (who: Cred, key: string, query = '') => raw(casket.url, who, { method: 'DELETE', path: `/${bucket}/${key}${query}` });
const newest = async (key: string) => (await casket.casket.services.state.listWriteLog({ bucket, key, limit: 1 }))[0];

describe('the write log in a versioned bucket', () => {
  it('a PutObject names the version it made', async () => {
    const r = await put(casket.admin, 'doc', 'v1');
    const versionId = r.headers['x-amz-version-id'] as string;
    expect(versionId).toBeTruthy();
    expect(await newest('doc')).toMatchObject({ operation: 'PutObject', newETag: etagOf('v1').slice(1, -1), versionId });
  });

  it('a DeleteObject names the delete marker it made; a delete of one version id made none and names none', async () => {
    const kept = (await put(casket.admin, 'marked', 'v1')).headers['x-amz-version-id'] as string;
    const d = await del(casket.admin, 'marked');
    expect([d.status, d.headers['x-amz-delete-marker']]).toEqual([204, 'true']);
    expect(await newest('marked')).toMatchObject({ operation: 'DeleteObject', previousETag: etagOf('v1').slice(1, -1), versionId: d.headers['x-amz-version-id'] });
    expect((await del(casket.admin, 'marked', `?versionId=${kept}`)).status).toBe(204);
    const entry = await newest('marked');
    expect(entry?.operation).toBe('DeleteObject');
    expect(entry?.versionId).toBeUndefined();
  });
});

describe('who wrote the current version, in a versioned bucket', () => {
  it('after carol deletes her newest version by id, a 412 no longer names her: the version uncovered is not hers', async () => {
    const v1 = (await put(casket.admin, 'uncovered', 'by admin')).headers.etag as string;
    const mine = (await put(carol, 'uncovered', 'by carol')).headers['x-amz-version-id'] as string;
    const before = await put(casket.admin, 'uncovered', 'late', { 'if-match': etagOf('stale') });
    expect([before.status, before.headers['x-casket-writer-access-key']], before.body).toEqual([412, carol.accessKeyId]);
    expect((await del(carol, 'uncovered', `?versionId=${mine}`)).status).toBe(204);
    const after = await put(casket.admin, 'uncovered', 'late', { 'if-match': etagOf('stale') });
    expect([after.status, xmlField(after.body, 'Code'), after.headers.etag], after.body).toEqual([412, 'PreconditionFailed', v1]);
    expect(after.headers['x-casket-writer-access-key']).toBeUndefined();
  });
});
