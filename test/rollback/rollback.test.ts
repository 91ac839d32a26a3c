/**
 * Rollback (docs/design.md §10, README "Rollback"), end to end: a real casket
 * process, the AWS SDK for every write, `casket rollback` run as the
 * command-line tool. On the embedded store, or in front of moto or Ceph RGW
 * with CASKET_TEST_UPSTREAM (the buckets there are unversioned: the
 * goal versions come from retention and --keep-pre-images).
 * (`npm run mutate:rooms` runs the same story with casket in-process:
 * startRollbackCasket.)
 *
 * The story: agent alice makes 50 writes over 20 keys — overwrites,
 * deletes, creates and a multipart upload — then a person changes 5 of
 * those keys. Rolling alice back restores the other 15 byte for byte, reports
 * the 5 as conflicts with their diffs, and leaves the person's writes as
 * they are; the dry run before it lists exactly that and writes nothing; the
 * write log names each restore as the rollback's, made by the admin; and
 * the rollback itself can be rolled back.
 */
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { raw, sha256hex } from '../helpers/raw.js';
import { agentDelete, agentMultipartCreate, agentPut, cliRollback, content, keysOf, type RollbackCasket, startRollbackCasket } from './helpers.js';

const bucket = `rollback-${randomBytes(3).toString('hex')}`;
const key = (i: number) => `notes/k${String(i).padStart(2, '0')}.txt`;
const original = (i: number) => `line one of ${key(i)}\nline two, as a person wrote it\nline three\n`;
const agentText = (i: number, n: number) => `line one of ${key(i)}\nline two, agent edit ${n}\nline three\n`;
const MiB = 1024 * 1024;

let casket: RollbackCasket;
let admin: S3Client;
let alice: S3Client;
let person: S3Client;
let since: string;
/** Each key's content after alice's writes (null: deleted). */
const aliceLast = new Map<string, Buffer | null>();
/** The 5 keys the person changed afterwards, and what the person left there (null: deleted). */
const personal = new Map<string, Buffer | null>();
let aliceWrites = 0;

beforeAll(async () => {
  casket = await startRollbackCasket({ keepPreImages: 'true' });
  admin = sdk(casket.url, casket.admin);
  alice = sdk(casket.url, casket.agents.alice!, { agentHeader: 'alice' });
  person = sdk(casket.url, casket.keys.person!);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  // Before the window: a person wrote k00..k11.
  for (let i = 0; i < 12; i++) await person.send(new PutObjectCommand({ Bucket: bucket, Key: key(i), Body: original(i) }));
  await new Promise((r) => setTimeout(r, 5));
  since = new Date().toISOString();
  const put = async (i: number, body: string | Buffer) => {
    await agentPut(alice, bucket, key(i), body);
    aliceLast.set(key(i), Buffer.from(body));
    aliceWrites++;
  };
  const del = async (i: number) => {
    await agentDelete(alice, bucket, key(i));
    aliceLast.set(key(i), null);
    aliceWrites++;
  };
  // k00..k04: 4 overwrites each; k05..k07: 3 each (29).
  for (let i = 0; i < 8; i++) for (let n = 1; n <= (i < 5 ? 4 : 3); n++) await put(i, agentText(i, n));
  // k08, k09: deleted (2); k10, k11: overwritten, then deleted (4).
  await del(8);
  await del(9);
  for (const i of [10, 11]) {
    await put(i, agentText(i, 1));
    await del(i);
  }
  // k12..k18: created, then overwritten (14).
  for (let i = 12; i < 19; i++) {
    await put(i, `created by alice: ${key(i)}\n`);
    await put(i, agentText(i, 2));
  }
  // k19: created by a multipart upload (1).
  const parts = [randomBytes(5 * MiB), randomBytes(1000)];
  await agentMultipartCreate(alice, bucket, key(19), parts);
  aliceLast.set(key(19), Buffer.concat(parts));
  aliceWrites++;
  // Then a person changes 5 of those keys: two overwrites, a delete, a deleted key brought back, an agent's creation edited.
  for (const [i, body] of [[0, 'the person rewrote k00\n'], [5, 'the person rewrote k05\n'], [8, 'the person brought k08 back\n'], [12, 'the person kept and edited k12\n']] as const) {
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: key(i), Body: body }));
    personal.set(key(i), Buffer.from(body));
  }
  await person.send(new DeleteObjectCommand({ Bucket: bucket, Key: key(1) }));
  personal.set(key(1), null);
}, 120_000);

afterAll(async () => {
  admin?.destroy();
  alice?.destroy();
  person?.destroy();
  await casket?.stop();
});

/** What rolling alice back must do to each of the other 15 keys: their state before her first write (null: absent). */
function goals(): Map<string, Buffer | null> {
  const out = new Map<string, Buffer | null>();
  for (let i = 0; i < 20; i++) if (!personal.has(key(i))) out.set(key(i), i < 12 ? Buffer.from(original(i)) : null);
  return out;
}

async function expectKeys(expected: Map<string, Buffer | null>): Promise<void> {
  for (const [k, body] of expected) {
    const now = await content(admin, bucket, k);
    if (body === null) expect(now, `${k} absent`).toBeNull();
    else expect(now?.body.equals(body), `${k} byte for byte`).toBe(true);
  }
}

describe('rollback of one agent', () => {
  it('--dry-run lists the 15 restores and the 5 conflicts, and writes nothing', async () => {
    // The story: 50 writes by alice over 20 keys, 5 of them changed by a person since.
    expect([aliceWrites, aliceLast.size, personal.size]).toEqual([50, 20, 5]);
    const before = new Map<string, string | null>();
    for (let i = 0; i < 20; i++) before.set(key(i), (await content(admin, bucket, key(i)))?.etag ?? null);
    const run = await cliRollback(casket, ['--agent', 'alice', '--since', since, '--bucket', bucket, '--dry-run', '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(3);
    const a = run.answer!;
    expect(a.dryRun).toBe(true);
    expect(keysOf(a.restored)).toEqual([...goals().keys()].sort());
    expect(keysOf(a.conflicts)).toEqual([...personal.keys()].sort());
    expect(a.unrecoverable).toEqual([]);
    for (let i = 0; i < 20; i++) expect((await content(admin, bucket, key(i)))?.etag ?? null, `${key(i)} untouched by a dry run`).toBe(before.get(key(i)));
  });

  it('without --json prints a readable summary: counts, each key, each conflict\'s diff', async () => {
    const run = await cliRollback(casket, ['--agent', 'alice', '--since', since, '--bucket', bucket, '--dry-run']);
    expect(run.code).toBe(3);
    const text = run.stdout;
    expect(text).toContain('dry run: nothing written');
    expect(text).toContain('would restore 15:');
    expect(text).toContain('conflicts 5 ');
    expect(text).toMatch(new RegExp(`delete s3://${bucket}/notes/k19\\.txt`));
    expect(text).toMatch(new RegExp(`put +s3://${bucket}/notes/k02\\.txt`));
    expect(text).toContain('+the person rewrote k00');
    expect(text).toContain('unrecoverable 0:');
  });

  it('restores the other 15 byte for byte, reports the 5 with diffs, and leaves the person\'s writes intact', async () => {
    const run = await cliRollback(casket, ['--agent', 'alice', '--since', since, '--bucket', bucket, '--json']);
    expect(run.stderr).toBe('');
    // 3: some keys were left (the conflicts).
    expect(run.code).toBe(3);
    const a = run.answer!;
    expect(a.dryRun).toBe(false);
    expect(a.writtenAs).toBe('rollback:alice');
    expect(keysOf(a.restored)).toEqual([...goals().keys()].sort());
    expect(keysOf(a.conflicts)).toEqual([...personal.keys()].sort());
    expect(a.unrecoverable).toEqual([]);
    expect(a.unchanged).toEqual([]);
    // The multipart creation went away; the deleted keys came back.
    expect(a.restored.find((r) => r.key === key(19))?.action).toBe('delete');
    expect(a.restored.find((r) => r.key === key(9))?.action).toBe('put');
    await expectKeys(goals());
    await expectKeys(personal);
    // Each conflict carries the diff from alice's version to the person's.
    const k00 = a.conflicts.find((c) => c.key === key(0))!;
    expect(k00.diff).toContain('-line two, agent edit 4');
    expect(k00.diff).toContain('+the person rewrote k00');
    expect(k00.currentWriter).toBe(casket.keys.person!.accessKeyId);
    const k01 = a.conflicts.find((c) => c.key === key(1))!;
    expect(k01.currentETag).toBeNull();
    expect(k01.diff).toContain('(deleted)');
  });

  it('the write log names each restore as the rollback\'s, made by the admin', async () => {
    const res = await raw(casket.url, casket.admin, { method: 'GET', path: `/_casket/writes?agent=${encodeURIComponent('rollback:alice')}&bucket=${bucket}` });
    expect(res.status).toBe(200);
    const writes = (JSON.parse(res.body) as { writes: Array<{ key: string; accessKey: string; agent: string }> }).writes;
    expect(writes.map((w) => w.key).sort()).toEqual([...goals().keys()].sort());
    for (const w of writes) expect(w.accessKey).toBe(casket.admin.accessKeyId);
  });

  it('a second run finds everything done: the restored keys unchanged, the conflicts still conflicts', async () => {
    const run = await cliRollback(casket, ['--agent', 'alice', '--since', since, '--bucket', bucket, '--json']);
    expect(keysOf(run.answer!.unchanged)).toEqual([...goals().keys()].sort());
    expect(run.answer!.restored).toEqual([]);
    expect(keysOf(run.answer!.conflicts)).toEqual([...personal.keys()].sort());
  });

  it('the rollback can itself be rolled back: alice\'s versions come back, the multipart one reported unrecoverable', async () => {
    const run = await cliRollback(casket, ['--agent', 'rollback:alice', '--since', since, '--bucket', bucket, '--json']);
    expect(run.stderr).toBe('');
    const a = run.answer!;
    expect(a.writtenAs).toBe('rollback:rollback:alice');
    // A multipart version's bytes are not kept by casket (its ETag is not their SHA-256), and this bucket keeps no versions.
    expect(keysOf(a.unrecoverable)).toEqual([key(19)]);
    expect(a.unrecoverable[0]!.reason).toBe('the version to restore is a multipart version, and the bucket keeps no version of it; nothing written');
    expect(keysOf(a.restored)).toEqual([...goals().keys()].filter((k) => k !== key(19)).sort());
    expect(a.conflicts).toEqual([]);
    const expected = new Map([...goals().keys()].filter((k) => k !== key(19)).map((k) => [k, aliceLast.get(k)!]));
    await expectKeys(expected);
    await expectKeys(personal);
    expect(await content(admin, bucket, key(19))).toBeNull();
  });

  it('is for admin keys only: an agent\'s or a person\'s signed request is refused 403 AccessDenied', async () => {
    for (const cred of [casket.agents.alice!, casket.keys.person!]) {
      const body = JSON.stringify({ agent: 'alice', since });
      const res = await raw(casket.url, cred, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(403);
      expect(JSON.parse(res.body)).toMatchObject({ error: 'AccessDenied' });
    }
    const unsigned = await raw(casket.url, casket.admin, { method: 'POST', path: '/_casket/rollback', body: '{}', unsigned: true });
    expect(unsigned.status).toBe(403);
    const run = await cliRollback(casket, ['--agent', 'alice', '--since', since], casket.keys.person!);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('AccessDenied');
  });

  it('a bad request gets a clear error and writes nothing: a body other than the one signed, a missing field, a bad time', async () => {
    const post = (body: string, payloadHash?: string) =>
      raw(casket.url, casket.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body, ...(payloadHash && { payloadHash }) });
    const signedOther = await post(JSON.stringify({ agent: 'rollback:rollback:alice', since }), sha256hex(JSON.stringify({ agent: 'nobody', since })));
    expect(signedOther.status).toBe(400);
    expect(JSON.parse(signedOther.body)).toMatchObject({ error: 'XAmzContentSHA256Mismatch' });
    expect(JSON.parse((await post(JSON.stringify({ since }))).body)).toMatchObject({ error: 'InvalidArgument' });
    const usage = await cliRollback(casket, ['--agent', 'alice', '--since', 'yesterday']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('ISO 8601');
    // Nothing was written: the keys are as the rollback of the rollback left them.
    const log = await raw(casket.url, casket.admin, { method: 'GET', path: `/_casket/writes?agent=${encodeURIComponent('rollback:rollback:rollback:alice')}` });
    expect(JSON.parse(log.body)).toEqual({ writes: [] });
  });
});
