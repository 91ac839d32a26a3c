/**
 * A bucket's own versions (docs/design.md §10) by version id belong to their
 * key, as in AWS: GetObject/HeadObject `?versionId=` of a key the caller may
 * read, naming the id of another key's version, finds nothing (NoSuchVersion
 * on the embedded store; the upstream's own answer in front of one, never
 * the other key's bytes), and the key it belongs to needs
 * s3:GetObjectVersion on that key (docs/design.md §14). The same rule as
 * retained versions by ETag (retained-versions-access.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { errorCode, raw } from '../helpers/raw.js';
import { upstreamKindFromEnv } from '../helpers/upstream.js';

const arn = (r: string) => `arn:aws:s3:::${r}`;
const embedded = upstreamKindFromEnv() === undefined;

/** Everything on `pub`, only the listing of `secret`. */
const MALLORY = {
  Statement: [
    { Effect: 'Allow', Action: 's3:*', Resource: [arn('pub'), arn('pub/*')] },
    { Effect: 'Allow', Action: 's3:ListBucket', Resource: arn('secret') },
  ],
};

let casket: RunningCasket;
let mallory: Cred;
let secretVersion: string;

const versioning = '<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>';

beforeAll(async () => {
  casket = await startCasket({ keys: { mallory: { policy: MALLORY } } });
  mallory = casket.keys.mallory!;
  for (const b of ['pub', 'secret']) {
    expect((await raw(casket.url, casket.admin, { method: 'PUT', path: `/${b}` })).status).toBe(200);
    expect((await raw(casket.url, casket.admin, { method: 'PUT', path: `/${b}?versioning`, body: versioning })).status).toBe(200);
  }
  const first = await raw(casket.url, casket.admin, { method: 'PUT', path: '/secret/payroll.txt', body: 'alice 91000 SECRET-ALICE\n' });
  secretVersion = first.headers['x-amz-version-id'] as string;
  expect(secretVersion).toBeTruthy();
  await raw(casket.url, casket.admin, { method: 'PUT', path: '/secret/payroll.txt', body: 'alice 93000 SECRET-ALICE\n' });
  expect((await raw(casket.url, mallory, { method: 'PUT', path: '/pub/mine.txt', body: 'mine\n' })).status).toBe(200);
});
afterAll(async () => {
  await casket?.stop();
});

describe('version ids: only the key they belong to', () => {
  it("GET and HEAD ?versionId= of my key naming the secret's version id find nothing of the secret", async () => {
    for (const method of ['GET', 'HEAD']) {
      const r = await raw(casket.url, mallory, { method, path: `/pub/mine.txt?versionId=${encodeURIComponent(secretVersion)}` });
      expect(r.body).not.toContain('SECRET');
      expect(r.status, `${method}: ${r.body}`).toBeGreaterThanOrEqual(400);
      if (embedded) expect(r.status).toBe(404);
      if (embedded && method === 'GET') expect(errorCode(r.body)).toBe('NoSuchVersion');
    }
  });

  it("GET ?versionId= of the secret itself is AccessDenied (s3:GetObjectVersion on secret/payroll.txt)", async () => {
    const r = await raw(casket.url, mallory, { method: 'GET', path: `/secret/payroll.txt?versionId=${encodeURIComponent(secretVersion)}` });
    expect([r.status, errorCode(r.body)]).toEqual([403, 'AccessDenied']);
    expect(r.body).toContain('s3:GetObjectVersion');
    expect(r.body).not.toContain('SECRET-');
  });
});
