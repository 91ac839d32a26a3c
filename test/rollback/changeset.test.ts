/**
 * `casket rollback --changeset ID` (issue 39; src/rollback/changeset.ts): a
 * changeset is undone as a unit — every key it wrote goes back to the version
 * before it, or none does when any of them was written since, including a
 * write that lands between the plan and the restore. The restores are one
 * changeset of their own.
 *
 * In-process casket (helpers/in-process.ts), so the last test can step in
 * between the plan and the commit through the retention store, as
 * restore-condition.test.ts does; the command-line tool is the built one.
 */
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commit } from '../helpers/changeset.js';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw, sha256hex } from '../helpers/raw.js';
import { cliRollback, content, keysOf, writingBeforeCommit } from './helpers.js';

const bucket = 'units';
let c: InProcessCasket;
let admin: S3Client;
let alice: S3Client;
let person: S3Client;

beforeAll(async () => {
  c = await startInProcess({ agents: ['alice'], keys: ['person'] });
  admin = sdk(c.url, c.admin);
  alice = sdk(c.url, c.agents.alice!);
  person = sdk(c.url, c.keys.person!);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  for (const x of [admin, alice, person]) x?.destroy();
  await c?.stop();
});

/** The quoted ETag casket gives a single-part object: the SHA-256 of its bytes. */
const etag = (body: string) => `"${sha256hex(body)}"`;

const text = async (key: string) => (await content(admin, bucket, key))?.body.toString() ?? null;

/** A person writes a.txt and b.txt; alice reads both whole, then commits a changeset: a and b changed, c created. */
async function aliceChangeset(dir: string): Promise<string> {
  const etags: Record<string, string> = {};
  for (const n of ['a', 'b']) {
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: `${dir}/${n}.txt`, Body: `${n}0` }));
    etags[n] = (await content(alice, bucket, `${dir}/${n}.txt`))!.etag;
  }
  const r = await commit(c.url, c.agents.alice!, bucket, [
    { key: `${dir}/a.txt`, body: 'a1', 'if-match': etags.a },
    { key: `${dir}/b.txt`, body: 'b1', 'if-match': etags.b },
    { key: `${dir}/c.txt`, body: 'c1', 'if-none-match': '*' },
  ]);
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json.changeset!;
}

describe('casket rollback --changeset', () => {
  it('puts every key back as one changeset: the changed ones to their old bytes, the created one deleted', async () => {
    const id = await aliceChangeset('whole');
    const run = await cliRollback(c, ['--changeset', id, '--json']);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(keysOf(run.answer!.restored)).toEqual(['whole/a.txt', 'whole/b.txt', 'whole/c.txt']);
    expect(run.answer!.agent).toBe('alice');
    expect([await text('whole/a.txt'), await text('whole/b.txt'), await text('whole/c.txt')]).toEqual(['a0', 'b0', null]);
    // The restores are one changeset of their own, written as rollback:alice.
    const log = await raw(c.url, c.admin, { method: 'GET', path: `/_casket/writes?bucket=${bucket}` });
    const restores = (JSON.parse(log.body) as { writes: Array<{ key: string; agent?: string; changeset?: string }> }).writes.filter((w) => w.changeset === run.answer!.restoredAs);
    expect(restores.map((w) => [w.key, w.agent]).sort()).toEqual([['whole/a.txt', 'rollback:alice'], ['whole/b.txt', 'rollback:alice'], ['whole/c.txt', 'rollback:alice']]);
  });

  it('one key written since by someone else: exit 3, that key a conflict, and no key restored', async () => {
    const id = await aliceChangeset('since');
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'since/b.txt', Body: "the person's b" }));
    const run = await cliRollback(c, ['--changeset', id, '--json']);
    expect(run.code, run.stderr + run.stdout).toBe(3);
    expect(keysOf(run.answer!.conflicts)).toEqual(['since/b.txt']);
    expect(run.answer!.restored).toEqual([]);
    expect(keysOf(run.answer!.notRestored!)).toEqual(['since/a.txt', 'since/c.txt']);
    expect([await text('since/a.txt'), await text('since/b.txt'), await text('since/c.txt')]).toEqual(['a1', "the person's b", 'c1']);
  });

  it('a write between the plan and the restore: the restore is refused whole, nothing put back', async () => {
    const id = await aliceChangeset('between');
    // Asked for b's old bytes (the plan has judged a already): the person writes a.
    const { answer: res, stepped } = await writingBeforeCommit(
      c,
      (version) => version.key === 'between/b.txt',
      () => person.send(new PutObjectCommand({ Bucket: bucket, Key: 'between/a.txt', Body: "the person's a" })),
      () => raw(c.url, c.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ changeset: id }) }),
    );
    expect(res.status, res.body).toBe(200);
    const answer = JSON.parse(res.body) as { restored: unknown[]; conflicts: Array<{ key: string; currentWriter?: string }> };
    expect(stepped).toBe(true);
    expect(answer.restored).toEqual([]);
    expect(answer.conflicts.map((x) => x.key)).toEqual(['between/a.txt']);
    expect([await text('between/a.txt'), await text('between/b.txt'), await text('between/c.txt')]).toEqual(["the person's a", 'b1', 'c1']);
  });

  it('a dry run says what it would restore, key by key in order and from where, and writes nothing; since is the changeset\'s own time unless given', async () => {
    const before = new Date();
    const id = await aliceChangeset('dry');
    const run = await cliRollback(c, ['--changeset', id, '--dry-run', '--json']);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.answer).toMatchObject({ agent: 'alice', writtenAs: 'rollback:alice', changeset: id, dryRun: true, conflicts: [], unrecoverable: [], unchanged: [] });
    expect(run.answer!.restoredAs).toBeUndefined();
    expect(run.answer!.notRestored).toBeUndefined();
    expect(run.answer!.restored).toEqual([
      { bucket, key: 'dry/a.txt', action: 'put', from: etag('a1'), to: etag('a0'), source: 'retained' },
      { bucket, key: 'dry/b.txt', action: 'put', from: etag('b1'), to: etag('b0'), source: 'retained' },
      { bucket, key: 'dry/c.txt', action: 'delete', from: etag('c1'), to: null },
    ]);
    const at = Date.parse(run.answer!.since);
    expect(at).toBeGreaterThanOrEqual(before.getTime());
    expect(at).toBeLessThanOrEqual(Date.now());
    const given = await cliRollback(c, ['--changeset', id, '--since', before.toISOString(), '--dry-run', '--json']);
    expect(given.answer!.since).toBe(before.toISOString());
    expect([await text('dry/a.txt'), await text('dry/b.txt'), await text('dry/c.txt')]).toEqual(['a1', 'b1', 'c1']);
  });

  it('--agent other than who wrote the changeset is refused, naming who did; a person\'s changeset is undone as rollback:<access key>', async () => {
    const id = await aliceChangeset('who');
    const run = await cliRollback(c, ['--changeset', id, '--agent', 'bob']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`InvalidArgument: Changeset ${id} was written by "alice", not "bob".`);
    expect(await text('who/a.txt')).toBe('a1');
    const r = await commit(c.url, c.keys.person!, bucket, [{ key: 'who/p.txt', body: 'p1' }]);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const undo = await cliRollback(c, ['--changeset', r.json.changeset!, '--json']);
    expect(undo.code, undo.stderr).toBe(0);
    const key = c.keys.person!.accessKeyId;
    expect(undo.answer).toMatchObject({ agent: key, writtenAs: `rollback:${key}`, restored: [{ key: 'who/p.txt', action: 'delete' }] });
    expect(await text('who/p.txt')).toBeNull();
  });

  it('a goal held nowhere any more: that key unrecoverable, the others not restored, nothing written', async () => {
    const id = await aliceChangeset('gone');
    // b's old bytes evicted from retention (no pre-images, no bucket versions here).
    const retainer = c.casket.services.retainer!;
    const get = retainer.get.bind(retainer);
    retainer.get = async (version) => (version.key === 'gone/b.txt' ? undefined : get(version));
    try {
      const run = await cliRollback(c, ['--changeset', id, '--json']);
      expect(run.code, run.stderr + run.stdout).toBe(3);
      expect(run.answer).toMatchObject({ restored: [], conflicts: [], unchanged: [] });
      expect(run.answer!.restoredAs).toBeUndefined();
      expect(run.answer!.unrecoverable).toEqual([
        { bucket, key: 'gone/b.txt', goalETag: etag('b0'), reason: 'the version to restore is neither retained, kept as a pre-image (--keep-pre-images), nor a version of the bucket' },
      ]);
      expect(run.answer!.notRestored).toEqual([
        { bucket, key: 'gone/a.txt', etag: etag('a1') },
        { bucket, key: 'gone/c.txt', etag: etag('c1') },
      ]);
    } finally {
      retainer.get = get;
    }
    expect([await text('gone/a.txt'), await text('gone/b.txt'), await text('gone/c.txt')]).toEqual(['a1', 'b1', 'c1']);
  });

  it('a person who wrote the changeset\'s very bytes again since is a conflict naming them: no key restored', async () => {
    const id = await aliceChangeset('same');
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'same/a.txt', Body: 'a1' }));
    // The plan sees it from the write log, before any restore is tried: a dry run says so too.
    const dry = await cliRollback(c, ['--changeset', id, '--dry-run', '--json']);
    expect(dry.code, dry.stderr + dry.stdout).toBe(3);
    expect(dry.answer).toMatchObject({ restored: [], conflicts: [{ key: 'same/a.txt', currentWriter: c.keys.person!.accessKeyId }] });
    const run = await cliRollback(c, ['--changeset', id, '--json']);
    expect(run.code, run.stderr + run.stdout).toBe(3);
    expect(run.answer!.conflicts).toMatchObject([{ key: 'same/a.txt', agentETag: etag('a1'), currentETag: etag('a1'), currentWriter: c.keys.person!.accessKeyId }]);
    expect(run.answer!.restored).toEqual([]);
    expect([await text('same/a.txt'), await text('same/b.txt'), await text('same/c.txt')]).toEqual(['a1', 'b1', 'c1']);
  });

  it('an unknown changeset id is a clear error, exit 1', async () => {
    const run = await cliRollback(c, ['--changeset', 'no-such-changeset']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/InvalidArgument: The write log holds no entry of changeset no-such-changeset/);
  });
});
