/**
 * --keep-pre-images (docs/design.md §10) and the condition an agent's write
 * commits under, through the guarded write (s3/write.ts) in this process:
 * a create-only write (If-None-Match: *) replaces nothing, so it keeps
 * nothing — not even when the key turns out to exist and the write is
 * refused at the commit; and under --guard observe an agent's unconditional
 * overwrite, which the guard lets through, keeps the version it replaced, so
 * `casket rollback` can undo what observe mode only watched. Retention for
 * diffs is off (--retain-max-size 0), so nothing else keeps a version.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'kept-before';

function casketWith(flags: Record<string, string>) {
  const c = { casket: undefined as unknown as InProcessCasket };
  beforeAll(async () => {
    c.casket = await startInProcess({ agents: ['alice'], flags: { keepPreImages: 'true', retainMaxSize: '0', ...flags } });
    await raw(c.casket.url, c.casket.admin, { method: 'PUT', path: `/${bucket}` });
  });
  afterAll(async () => c.casket?.stop());
  return {
    put: (who: 'admin' | 'alice', key: string, body: string, headers: Record<string, string> = {}) =>
      raw(c.casket.url, who === 'admin' ? c.casket.admin : c.casket.agents.alice!, { method: 'PUT', path: `/${bucket}/${key}`, headers, body }),
    preImage: async (key: string, body: string) => (await c.casket.casket.services.preImages!.get({ bucket, key, etag: etagOf(body).slice(1, -1) }))?.toString(),
    get casket() {
      return c.casket;
    },
    content: async (key: string) => (await raw(c.casket.url, c.casket.admin, { method: 'GET', path: `/${bucket}/${key}` })).body,
  };
}

describe('--guard enforce: a create-only write', () => {
  const c = casketWith({});

  it("an agent's If-None-Match: * on a key that exists: 412 at the commit, and the version there is not kept", async () => {
    await c.put('admin', 'exists', 'there first');
    const r = await c.put('alice', 'exists', 'by alice', { 'if-none-match': '*' });
    expect([r.status, xmlField(r.body, 'Condition')], r.body).toEqual([412, 'If-None-Match']);
    expect(await c.content('exists')).toBe('there first');
    expect(await c.preImage('exists', 'there first')).toBeUndefined();
  });
});

describe('--guard observe', () => {
  const c = casketWith({ guard: 'observe' });

  it("an agent's unconditional overwrite is let through, and the version it replaced is kept", async () => {
    await c.put('admin', 'watched', 'by a person');
    const r = await c.put('alice', 'watched', 'by alice, unconditionally');
    expect(r.status, r.body).toBe(200);
    expect(await c.content('watched')).toBe('by alice, unconditionally');
    expect(await c.preImage('watched', 'by a person')).toBe('by a person');
  });

  // If-None-Match naming an ETag (RFC 9110 §13.1.2) is not create-only: when
  // the key holds another version, the write replaces it, so it is kept.
  // (An agent that has not read the key at all is refused even here; one that
  // read part of it is only watched.)
  it("an agent's If-None-Match naming another version's ETag, after a partial read, replaces the version there, which is kept", async () => {
    await c.put('admin', 'named', 'before the named write');
    const part = await raw(c.casket.url, c.casket.agents.alice!, { method: 'GET', path: `/${bucket}/named`, headers: { range: 'bytes=0-5' } });
    expect([part.status, part.body]).toEqual([206, 'before']);
    const r = await c.put('alice', 'named', 'by alice, not over "other"', { 'if-none-match': etagOf('other') });
    expect(r.status, r.body).toBe(200);
    expect(await c.content('named')).toBe('by alice, not over "other"');
    expect(await c.preImage('named', 'before the named write')).toBe('before the named write');
  });
});
