/**
 * A changeset over two buckets, rolled back as a unit (src/rollback/changeset.ts;
 * docs/operating.md "A changeset as a unit"). An MCP agent's write_files may
 * name files in several buckets in one changeset (src/mcp/tools/write_files.ts),
 * so the rollback must tell two keys of the same name apart by their bucket:
 * in the order it lists them, in which key a write since was refused for, and
 * in what it left as it was. The same key name is in both buckets on purpose.
 *
 * In-process casket (helpers/in-process.ts): the retention store steps in to
 * write between the plan and the commit, as changeset-edges.test.ts does.
 */
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { call, httpClient, mintToken, text } from '../helpers/mcp.js';
import { content, postRollback, writingBeforeCommit } from './helpers.js';

const [one, two] = ['cs-one', 'cs-two'];
let c: InProcessCasket;
let admin: S3Client;
let person: S3Client;
let alice: Client;

beforeAll(async () => {
  c = await startInProcess({ agents: ['alice'], keys: ['person'] });
  admin = sdk(c.url, c.admin);
  person = sdk(c.url, c.keys.person!);
  for (const b of [one, two]) await admin.send(new CreateBucketCommand({ Bucket: b }));
  alice = await httpClient(c, mintToken(c.agents.alice!), 'alice');
});
afterAll(async () => {
  await alice?.close();
  for (const x of [admin, person]) x?.destroy();
  await c?.stop();
});

/** A person writes each file ("<path> 0"); alice reads each whole and writes them all ("<path> 1") with write_files. The changeset's id, from the write log. */
async function aliceWritesFiles(paths: string[]): Promise<string> {
  for (const p of paths) {
    const [bucket, key] = [p.slice(0, p.indexOf('/')), p.slice(p.indexOf('/') + 1)];
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `${p} 0` }));
    const read = await call(alice, 'read_text_file', { path: p });
    expect(read.isError, text(read)).toBeFalsy();
  }
  const r = await call(alice, 'write_files', { files: paths.map((p) => ({ path: p, content: `${p} 1` })) });
  expect(r.isError, text(r)).toBeFalsy();
  const first = paths[0]!;
  const entry = await c.casket.services.state.lastWrite(first.slice(0, first.indexOf('/')), first.slice(first.indexOf('/') + 1));
  expect(entry?.changeset).toBeDefined();
  return entry!.changeset!;
}

const body = async (bucket: string, key: string) => (await content(admin, bucket, key))?.body.toString();
const at = (x: { bucket: string; key: string }) => `${x.bucket}/${x.key}`;

describe('rollback of a changeset over two buckets', () => {
  it('restores every file in both buckets, listed by bucket and then key', async () => {
    const id = await aliceWritesFiles([`${two}/a.md`, `${one}/z.md`, `${two}/same.md`, `${one}/same.md`]);
    const answer = await postRollback(c, { changeset: id });
    expect(answer.restored.map(at)).toEqual([`${one}/same.md`, `${one}/z.md`, `${two}/a.md`, `${two}/same.md`]);
    expect(answer.conflicts).toEqual([]);
    for (const p of [`${one}/z.md`, `${one}/same.md`, `${two}/a.md`, `${two}/same.md`]) expect(await body(p.slice(0, p.indexOf('/')), p.slice(p.indexOf('/') + 1))).toBe(`${p} 0`);
  });

  it('a write since to one bucket\'s file refuses the whole rollback: the conflict names that bucket\'s file, the other bucket\'s file of the same name is left as it was', async () => {
    const id = await aliceWritesFiles([`${one}/both.md`, `${two}/both.md`]);
    const alices = { one: (await content(admin, one, 'both.md'))!.etag, two: (await content(admin, two, 'both.md'))!.etag };
    // Asked for the last planned file's old bytes (the plan has judged the first): the person writes cs-two's both.md.
    const { answer, stepped } = await writingBeforeCommit(
      c,
      (version) => version.bucket === two,
      () => person.send(new PutObjectCommand({ Bucket: two, Key: 'both.md', Body: "the person's" })),
      () => postRollback(c, { changeset: id }),
    );
    expect(stepped).toBe(true);
    expect(answer.restored).toEqual([]);
    const persons = (await content(admin, two, 'both.md'))!.etag;
    expect(answer.conflicts).toMatchObject([{ bucket: two, key: 'both.md', agentETag: alices.two, currentETag: persons, currentWriter: c.keys.person!.accessKeyId }]);
    expect(answer.notRestored).toEqual([{ bucket: one, key: 'both.md', etag: alices.one }]);
    expect(await body(one, 'both.md')).toBe(`${one}/both.md 1`);
    expect(await body(two, 'both.md')).toBe("the person's");
  });
});
