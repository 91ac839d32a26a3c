/**
 * awscli (v1, `python3 -m awscli`) through casket: `s3 cp` both ways, small
 * and 20 MiB (8 MiB parts up; HEAD then ranged GETs with If-Match down),
 * `s3 ls`, `s3 sync` twice (the second copies nothing), and `s3api
 * put-object --if-match / --if-none-match` — over HTTP and HTTPS (aws-chunked
 * with a CRC32 trailer on every PUT), as a person and as an agent (its own
 * key). `aws s3` cannot send If-Match, so this casket runs
 * `--agent-writes read-stamp`.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsCli, exits, hasPythonModule, ok, sha256File, type AwsCli } from '../helpers/cli-tools.js';
import { need } from '../helpers/tools.js';
import { MiB, PROTOCOLS, ROLES, multipartETag, plainETag, sha256, startClientCasket, type ClientCasket, type Role } from './harness.js';

/** awscli's default multipart_chunksize (and threshold). */
const AWSCLI_PART = 8 * MiB;
const QUIET = ['--only-show-errors'];

// In CI a missing tool fails the run (need throws); elsewhere the file is skipped.
const available = need('awscli (python3 -m awscli)', hasPythonModule('awscli'));

describe.runIf(available).each(PROTOCOLS)('awscli over %s', (protocol) => {
  let env: ClientCasket;
  beforeAll(async () => {
    env = await startClientCasket(protocol, { client: 'awscli', agentWrites: 'read-stamp', buckets: ['awscli-person', 'awscli-agent'] });
  });
  afterAll(async () => env?.stop());

  describe.each(ROLES)('as %s', (role: Role) => {
    const bucket = `awscli-${role}`;
    let aws: AwsCli;
    let dir: string;
    beforeAll(() => {
      dir = join(env.dir, role);
      mkdirSync(dir, { recursive: true });
      aws = awsCli(dir, env.endpoint, env.cred(role));
    });

    it('s3 cp up and down, small and 20 MiB; s3 ls', async () => {
      const small = randomBytes(3000);
      const big = randomBytes(20 * MiB);
      writeFileSync(join(dir, 'small.bin'), small);
      writeFileSync(join(dir, 'big.bin'), big);
      ok(await aws.run(['s3', 'cp', join(dir, 'small.bin'), `s3://${bucket}/cp/small.bin`, ...QUIET]));
      ok(await aws.run(['s3', 'cp', join(dir, 'big.bin'), `s3://${bucket}/cp/big.bin`, ...QUIET]));
      expect((await env.head(bucket, 'cp/small.bin')).ETag, `awscli (${role}, ${protocol}) s3 cp up small → HeadObject`).toBe(plainETag(small));
      expect((await env.head(bucket, 'cp/big.bin')).ETag, `awscli (${role}, ${protocol}) s3 cp up 20 MiB → HeadObject`).toBe(multipartETag(big, AWSCLI_PART));

      ok(await aws.run(['s3', 'cp', `s3://${bucket}/cp/small.bin`, join(dir, 'small.down'), ...QUIET]));
      ok(await aws.run(['s3', 'cp', `s3://${bucket}/cp/big.bin`, join(dir, 'big.down'), ...QUIET]));
      expect(await sha256File(join(dir, 'small.down')), `awscli (${role}, ${protocol}) s3 cp down small`).toBe(sha256(small));
      expect(await sha256File(join(dir, 'big.down')), `awscli (${role}, ${protocol}) s3 cp down 20 MiB`).toBe(sha256(big));

      const ls = ok(await aws.run(['s3', 'ls', `s3://${bucket}/cp/`]));
      const rows = ls.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/).slice(2));
      expect(rows, `awscli (${role}, ${protocol}) s3 ls`).toEqual([[String(big.length), 'big.bin'], [String(small.length), 'small.bin']]);

    });

    it('s3 sync twice: the second copies nothing', async () => {
      const src = join(dir, 'tree');
      mkdirSync(join(src, 'sub'), { recursive: true });
      const files: Record<string, Buffer> = { 'a.txt': Buffer.from('alpha\n'), 'sub/b.bin': randomBytes(70_000), 'sub/c d.txt': Buffer.from('with a space\n') };
      // Files older than the upload, as files to sync usually are: awscli
      // re-uploads a file whose mtime is later than the object's LastModified,
      // which S3 (and moto) keep to the second.
      const past = new Date(Date.now() - 60_000);
      for (const [name, data] of Object.entries(files)) {
        writeFileSync(join(src, name), data);
        utimesSync(join(src, name), past, past);
      }

      const first = await env.mark();
      ok(await aws.run(['s3', 'sync', src, `s3://${bucket}/sync/`, ...QUIET]));
      expect(await env.writesSince(first, bucket), `awscli (${role}, ${protocol}) first s3 sync`).toHaveLength(3);
      for (const [name, data] of Object.entries(files)) expect((await env.head(bucket, `sync/${name}`)).ETag).toBe(plainETag(data));

      const second = await env.mark();
      const again = ok(await aws.run(['s3', 'sync', src, `s3://${bucket}/sync/`]));
      expect(await env.writesSince(second, bucket), `awscli (${role}, ${protocol}) second s3 sync wrote: ${again.stdout}`).toEqual([]);
    });

    it('s3api put-object --if-none-match / --if-match; a stale --if-match exits 255 and writes nothing', async () => {
      const key = 'cas/todo.txt';
      writeFileSync(join(dir, 'v1'), 'todo v1\n');
      writeFileSync(join(dir, 'v2'), 'todo v2\n');
      writeFileSync(join(dir, 'v3'), 'todo v3, lost\n');
      const putV1 = JSON.parse(ok(await aws.run(['s3api', 'put-object', '--bucket', bucket, '--key', key, '--body', join(dir, 'v1'), '--if-none-match', '*'])).stdout) as { ETag: string };
      expect(putV1.ETag, `awscli (${role}, ${protocol}) s3api put-object --if-none-match`).toBe(plainETag(Buffer.from('todo v1\n')));
      expect((await env.head(bucket, key)).ETag).toBe(putV1.ETag);
      exits(await aws.run(['s3api', 'put-object', '--bucket', bucket, '--key', key, '--body', join(dir, 'v2'), '--if-none-match', '*']), 255);
      const putV2 = JSON.parse(ok(await aws.run(['s3api', 'put-object', '--bucket', bucket, '--key', key, '--body', join(dir, 'v2'), '--if-match', putV1.ETag])).stdout) as { ETag: string };
      expect(putV2.ETag).toBe(plainETag(Buffer.from('todo v2\n')));

      const other = await env.overwrite(bucket, key, 'todo by someone else\n');
      const stale = exits(await aws.run(['s3api', 'put-object', '--bucket', bucket, '--key', key, '--body', join(dir, 'v3'), '--if-match', putV2.ETag]), 255);
      expect(stale.stderr, `awscli (${role}, ${protocol}) s3api put-object --if-match stale`).toMatch(/PreconditionFailed/);
      expect((await env.head(bucket, key)).ETag, 'nothing was written').toBe(other);
    });
  });
});
