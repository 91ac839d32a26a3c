/**
 * --keep-pre-images (docs/design.md §10) through the guarded write
 * (s3/write.ts) in this process: the version an agent's overwrite or delete
 * replaces is kept, before the commit, where `casket rollback` finds it; a
 * person's write keeps nothing, nor does an agent's refused write. Retention
 * for diffs is off (--retain-max-size 0), so nothing else keeps a version.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'undo';
let casket: InProcessCasket;
let alice: Cred;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'], flags: { keepPreImages: 'true', retainMaxSize: '0' } });
  alice = casket.agents.alice!;
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  await casket?.stop();
});

const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body });
const preImage = async (key: string, body: string) => (await casket.casket.services.preImages!.get({ bucket, key, etag: etagOf(body).slice(1, -1) }))?.toString();

/** alice reads `key` whole; casket records the read after the response. */
async function read(key: string): Promise<string> {
  const r = await raw(casket.url, alice, { method: 'GET', path: `/${bucket}/${key}` });
  await until(async () => (await casket.casket.services.state.getStamp('alice', bucket, key))?.etag === (r.headers.etag as string).slice(1, -1), `alice's read of ${key} to be recorded`);
  return r.headers.etag as string;
}

describe('--keep-pre-images', () => {
  it("an agent's overwrite keeps the version it replaced; a person's keeps nothing", async () => {
    await put(casket.admin, 'doc', 'by a person');
    await put(casket.admin, 'doc', 'by a person, again');
    expect(await preImage('doc', 'by a person')).toBeUndefined();
    const v = await read('doc');
    expect((await put(alice, 'doc', 'by alice', { 'if-match': v })).status).toBe(200);
    expect(await preImage('doc', 'by a person, again')).toBe('by a person, again');
  });

  it("an agent's delete keeps the version it removed", async () => {
    await put(casket.admin, 'gone', 'deleted by alice');
    const v = await read('gone');
    expect((await raw(casket.url, alice, { method: 'DELETE', path: `/${bucket}/gone`, headers: { 'if-match': v } })).status).toBe(204);
    expect(await preImage('gone', 'deleted by alice')).toBe('deleted by alice');
  });

  it("an agent's write the guard refuses before the commit keeps nothing", async () => {
    // Refused as it arrives (no If-Match: 428); the body is still received, to
    // tell an identical one, under a condition nothing satisfies — no commit
    // to keep a pre-image for. (A write refused only at the commit has kept
    // one first: the commit decides, atomically, after the pre-image is kept.)
    await put(casket.admin, 'stays', 'current, not replaced');
    await read('stays');
    const r = await put(alice, 'stays', 'by alice');
    expect(r.status).toBe(428);
    expect(await preImage('stays', 'current, not replaced')).toBeUndefined();
  });
});
