/**
 * The opt-in merge of a PutObject (x-casket-merge: text, docs/design.md §6) through
 * casket's HTTP front in this process: edits of different sections from one
 * base both land; overlapping edits are a 412 merge-conflict linking the
 * merge with markers; without a kept base, or for binary, the refusal an
 * ordinary write gets. test/integration/diff-merge.test.ts drives the same
 * with real SDKs against a spawned casket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw, xmlField } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'merges';
let casket: InProcessCasket;
let alice: Cred;
let bob: Cred;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice', 'bob'] });
  ({ alice, bob } = casket.agents as { alice: Cred; bob: Cred });
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  await casket?.stop();
});

const text = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n') + '\n';
const edit = (from: string, to: string, base = text) => base.replace(`${from}\n`, `${to}\n`);

/** A person writes `body`; alice and bob read it whole; casket has kept it (in the background, after the reads). */
async function sharedBase(key: string, body: string | Buffer = text): Promise<string> {
  const etag = (await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/${key}`, body })).headers.etag as string;
  for (const who of [alice, bob]) expect((await raw(casket.url, who, { method: 'GET', path: `/${bucket}/${key}` })).status).toBe(200);
  await until(async () => (await casket.casket.services.retainer!.get({ bucket, key, etag: etag.slice(1, -1) })) !== undefined, `the base of ${key} to be kept`);
  return etag;
}

const write = (who: Cred, key: string, ifMatch: string, body: string | Buffer, merge = true) =>
  raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers: { 'if-match': ifMatch, ...(merge && { 'x-casket-merge': 'text' }) }, body });

const get = async (key: string) => (await raw(casket.url, casket.admin, { method: 'GET', path: `/${bucket}/${key}` })).body;

describe('x-casket-merge: text', () => {
  it('edits of different sections from one base both land, the second merged into the first', async () => {
    const base = await sharedBase('notes.md');
    const a = await write(alice, 'notes.md', base, edit('line 3', 'line 3 by alice'));
    expect([a.status, a.headers['x-casket-merged']]).toEqual([200, undefined]);
    const merged = edit('line 25', 'line 25 by bob', edit('line 3', 'line 3 by alice'));
    const b = await write(bob, 'notes.md', base, edit('line 25', 'line 25 by bob'));
    expect([b.status, b.headers.etag, b.headers['x-casket-merged']], b.body).toEqual([200, etagOf(merged), a.headers.etag]);
    expect(await get('notes.md')).toBe(merged);
  });

  it('overlapping edits: 412 merge-conflict linking the merge with both sides marked; nothing written', async () => {
    const base = await sharedBase('clash.md');
    const a = await write(alice, 'clash.md', base, edit('line 7', 'seven by alice'));
    const b = await write(bob, 'clash.md', base, edit('line 7', 'seven by bob'));
    expect([b.status, xmlField(b.body, 'Reason')], b.body).toEqual([412, 'merge-conflict']);
    const link = b.headers['x-casket-merge-conflict'] as string;
    expect(link).toMatch(/^\/_casket\/merge\?/);
    expect(await get('clash.md')).toBe(edit('line 7', 'seven by alice'));
    const m = await raw(casket.url, bob, { method: 'GET', path: link });
    expect([m.status, m.headers['x-casket-merge-clean']]).toEqual([200, 'false']);
    expect(m.body).toContain('seven by alice');
    expect(m.body).toContain('seven by bob');
    // Each side is named by its ETag, the current one with the agent that wrote it.
    expect(m.body).toContain(`<<<<<<< current ${a.headers.etag} (agent "alice")\n`);
    expect(m.body).toContain(`>>>>>>> yours ${etagOf(edit('line 7', 'seven by bob'))}\n`);
    expect(a.status).toBe(200);
  });

  it('the current side written by no agent is named by its ETag alone', async () => {
    const base = await sharedBase('person.md');
    const p = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/person.md`, headers: { 'if-match': base }, body: edit('line 9', 'nine by a person') });
    const b = await write(bob, 'person.md', base, edit('line 9', 'nine by bob'));
    expect(xmlField(b.body, 'Reason'), b.body).toBe('merge-conflict');
    const m = await raw(casket.url, bob, { method: 'GET', path: b.headers['x-casket-merge-conflict'] as string });
    expect(m.body).toContain(`<<<<<<< current ${p.headers.etag}\n`);
  });

  it('x-casket-merge: " Text " merges as "text" does (case and surrounding space do not matter)', async () => {
    const base = await sharedBase('cased.md');
    expect((await write(alice, 'cased.md', base, edit('line 2', 'two by alice'))).status).toBe(200);
    const b = await raw(casket.url, bob, { method: 'PUT', path: `/${bucket}/cased.md`, headers: { 'if-match': base, 'x-casket-merge': ' Text ' }, body: edit('line 28', 'twenty-eight by bob') });
    expect([b.status, b.headers['x-casket-merged']], b.body).toEqual([200, expect.any(String)]);
  });

  it('a base casket did not keep (no agent read it): the ordinary 412, nothing merged', async () => {
    // Versions are kept by content: bytes no agent has read or written here.
    const own = `${text}unkept\n`;
    const v1 = (await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/unkept.md`, body: own })).headers.etag as string;
    await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/unkept.md`, body: edit('line 1', 'one by a person', own) });
    const r = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/unkept.md`, headers: { 'if-match': v1, 'x-casket-merge': 'text' }, body: edit('line 20', 'twenty', own) });
    expect([r.status, xmlField(r.body, 'Code'), r.headers['x-casket-merged']], r.body).toEqual([412, 'PreconditionFailed', undefined]);
    expect(await get('unkept.md')).toBe(edit('line 1', 'one by a person', own));
  });

  it('binary versions do not merge: the ordinary 412', async () => {
    const bin = Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from(text)]);
    const base = await sharedBase('data.bin', bin);
    expect((await write(alice, 'data.bin', base, Buffer.concat([bin, Buffer.from([9])]))).status).toBe(200);
    const b = await write(bob, 'data.bin', base, Buffer.concat([Buffer.from([7]), bin]));
    expect([b.status, xmlField(b.body, 'Reason')], b.body).toEqual([412, 'precondition-failed']);
  });

  it('needs an If-Match naming one version: 400 InvalidRequest without one', async () => {
    const r = await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/notes.md`, headers: { 'x-casket-merge': 'text' }, body: 'x' });
    expect([r.status, xmlField(r.body, 'Code')], r.body).toEqual([400, 'InvalidRequest']);
  });
});
