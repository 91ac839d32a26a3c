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
import { raw } from '../helpers/raw.js';
import { cliRollback, content, keysOf } from './helpers.js';

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
    const retainer = c.casket.services.retainer!;
    const get = retainer.get.bind(retainer);
    let stepped = false;
    retainer.get = async (version) => {
      if (!stepped && version.key === 'between/b.txt') {
        stepped = true;
        await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'between/a.txt', Body: "the person's a" }));
      }
      return get(version);
    };
    try {
      const res = await raw(c.url, c.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ changeset: id }) });
      expect(res.status, res.body).toBe(200);
      const answer = JSON.parse(res.body) as { restored: unknown[]; conflicts: Array<{ key: string; currentWriter?: string }> };
      expect(stepped).toBe(true);
      expect(answer.restored).toEqual([]);
      expect(answer.conflicts.map((x) => x.key)).toEqual(['between/a.txt']);
    } finally {
      retainer.get = get;
    }
    expect([await text('between/a.txt'), await text('between/b.txt'), await text('between/c.txt')]).toEqual(["the person's a", 'b1', 'c1']);
  });

  it('an unknown changeset id is a clear error, exit 1', async () => {
    const run = await cliRollback(c, ['--changeset', 'no-such-changeset']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/InvalidArgument: The write log holds no entry of changeset no-such-changeset/);
  });
});
