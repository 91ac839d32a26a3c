/**
 * s3cmd 2.3.0 through casket with a config file of its own (host_base and
 * host_bucket = casket, signature_v2 = False, the test CA): put/get/ls/
 * sync/del, small and multipart (5 MiB parts), over HTTP and HTTPS, as a
 * person and as an agent. s3cmd takes a dash-less ETag for an MD5, so casket
 * (`--etag-suffix auto`, the default) shows it `"<sha256>-1"`: no MD5
 * warnings, no retries, and `sync` twice copies nothing the second time.
 * s3cmd adds `If-Match` only with --add-header, so this casket runs
 * `--agent-writes read-stamp`. The same commands again with
 * `signature_v2 = True` (Signature Version 2 header auth).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failure } from '../helpers/clients.js';
import { exits, ok, s3cmd, sha256File, type ToolResult } from '../helpers/cli-tools.js';
import { hasCommand, need } from '../helpers/tools.js';
import { MiB, PROTOCOLS, ROLES, multipartETag, plainETag, sha256, startClientCasket, suffixed, type ClientCasket, type Role } from './harness.js';

const PART = 5 * MiB;
const CHUNK = ['--multipart-chunk-size-mb=5'];

/** What s3cmd prints when it doubts an ETag: it must never. */
function noMd5Complaints(r: ToolResult): void {
  expect(`${r.stdout}\n${r.stderr}`, `s3cmd \`${r.command}\``).not.toMatch(/WARNING|retrying|failed/i);
}

// In CI a missing tool fails the run (need throws); elsewhere the file is skipped.
const available = need('s3cmd', hasCommand('s3cmd'));

describe.runIf(available).each(PROTOCOLS)('s3cmd over %s', (protocol) => {
  let env: ClientCasket;
  beforeAll(async () => {
    env = await startClientCasket(protocol, { client: 's3cmd', agentWrites: 'read-stamp', buckets: ['s3cmd-person', 's3cmd-agent', 's3cmd-v2-person', 's3cmd-v2-agent'] });
  });
  afterAll(async () => env?.stop());

  describe.each(ROLES)('as %s', (role: Role) => {
    const bucket = `s3cmd-${role}`;
    let cmd: ReturnType<typeof s3cmd>;
    let dir: string;
    beforeAll(() => {
      dir = join(env.dir, role);
      mkdirSync(dir, { recursive: true });
      cmd = s3cmd(dir, env.endpoint, env.cred(role));
    });
    const run = async (args: string[]) => {
      const r = ok(await cmd.run(args));
      noMd5Complaints(r);
      return r;
    };

    it('put and get, small and multipart; ls; del', async () => {
      const small = randomBytes(5000);
      const big = randomBytes(11 * MiB + 3);
      writeFileSync(join(dir, 'small.bin'), small);
      writeFileSync(join(dir, 'big.bin'), big);
      await run(['put', join(dir, 'small.bin'), `s3://${bucket}/put/small.bin`]);
      await run(['put', ...CHUNK, join(dir, 'big.bin'), `s3://${bucket}/put/big.bin`]);
      expect((await env.head(bucket, 'put/small.bin')).ETag, `s3cmd (${role}, ${protocol}) put small → HeadObject`).toBe(plainETag(small));
      expect((await env.head(bucket, 'put/big.bin')).ETag, `s3cmd (${role}, ${protocol}) put multipart → HeadObject`).toBe(multipartETag(big, PART));

      await run(['get', '--force', `s3://${bucket}/put/small.bin`, join(dir, 'small.down')]);
      await run(['get', '--force', `s3://${bucket}/put/big.bin`, join(dir, 'big.down')]);
      expect(await sha256File(join(dir, 'small.down')), `s3cmd (${role}, ${protocol}) get small`).toBe(sha256(small));
      expect(await sha256File(join(dir, 'big.down')), `s3cmd (${role}, ${protocol}) get multipart`).toBe(sha256(big));

      const ls = await run(['ls', `s3://${bucket}/put/`]);
      const rows = ls.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/).slice(2));
      expect(rows, `s3cmd (${role}, ${protocol}) ls`).toEqual([[String(big.length), `s3://${bucket}/put/big.bin`], [String(small.length), `s3://${bucket}/put/small.bin`]]);

      await run(['del', `s3://${bucket}/put/small.bin`]);
      expect(await failure(env.head(bucket, 'put/small.bin')), `s3cmd (${role}, ${protocol}) del`).toMatchObject({ status: 404 });
    });

    it('sync twice: the second copies nothing', async () => {
      const src = join(dir, 'tree');
      mkdirSync(join(src, 'sub'), { recursive: true });
      const files: Record<string, Buffer> = { 'a.txt': Buffer.from('alpha\n'), 'sub/b.bin': randomBytes(6 * MiB), 'sub/c d.txt': Buffer.from('with a space\n') };
      for (const [name, data] of Object.entries(files)) writeFileSync(join(src, name), data);

      const first = await env.mark();
      await run(['sync', ...CHUNK, `${src}/`, `s3://${bucket}/sync/`]);
      expect((await env.writesSince(first, bucket)).filter((w) => !w.startsWith('UploadPart')), `s3cmd (${role}, ${protocol}) first sync`).toHaveLength(3);
      expect((await env.head(bucket, 'sync/sub/b.bin')).ETag).toBe(multipartETag(files['sub/b.bin']!, PART));
      expect((await env.head(bucket, 'sync/a.txt')).ETag).toBe(plainETag(files['a.txt']!));

      const second = await env.mark();
      const again = await run(['sync', ...CHUNK, `${src}/`, `s3://${bucket}/sync/`]);
      expect(await env.writesSince(second, bucket), `s3cmd (${role}, ${protocol}) second sync: ${again.stdout}`).toEqual([]);
    });

    it('info shows the ETag as "<sha256>-1"; a stale --add-header If-Match exits 14 and writes nothing', async () => {
      const key = 'cas/report.txt';
      const v1 = await env.overwrite(bucket, key, 'report v1\n');
      const info = await run(['info', `s3://${bucket}/${key}`]);
      const seen = /MD5 sum:\s+(\S+)/.exec(info.stdout)?.[1];
      expect(`"${seen}"`, `s3cmd (${role}, ${protocol}) info`).toBe(suffixed(v1));
      await run(['get', '--force', `s3://${bucket}/${key}`, join(dir, 'report.down')]);

      const v2 = await env.overwrite(bucket, key, 'report v2, by someone else\n');
      writeFileSync(join(dir, 'report.txt'), 'report v3, lost\n');
      const stale = exits(await cmd.run(['put', `--add-header=If-Match:"${seen}"`, join(dir, 'report.txt'), `s3://${bucket}/${key}`]), 14);
      expect(stale.stderr, `s3cmd (${role}, ${protocol}) put --add-header If-Match stale`).toMatch(/412 \(PreconditionFailed\)/);
      expect((await env.head(bucket, key)).ETag, 'nothing was written').toBe(v2);

      // Read again, and the write conditioned on what was read goes through.
      await run(['get', '--force', `s3://${bucket}/${key}`, join(dir, 'report.down')]);
      const fresh = /MD5 sum:\s+(\S+)/.exec((await run(['info', `s3://${bucket}/${key}`])).stdout)?.[1];
      await run(['put', `--add-header=If-Match:"${fresh}"`, join(dir, 'report.txt'), `s3://${bucket}/${key}`]);
      expect((await env.head(bucket, key)).ETag).toBe(plainETag(Buffer.from('report v3, lost\n')));
    });
  });

  // Signature Version 2: the same commands with `signature_v2 = True`.
  describe.each(ROLES)('with signature_v2 = True, as %s', (role: Role) => {
    const bucket = `s3cmd-v2-${role}`;
    let cmd: ReturnType<typeof s3cmd>;
    let dir: string;
    beforeAll(() => {
      dir = join(env.dir, `v2-${role}`);
      mkdirSync(dir, { recursive: true });
      cmd = s3cmd(dir, env.endpoint, env.cred(role), 's3cmd-v2', true);
    });
    const run = async (args: string[]) => {
      const r = ok(await cmd.run(args));
      noMd5Complaints(r);
      return r;
    };

    it('put and get, small and multipart; ls; info; del — signed with V2', async () => {
      const small = randomBytes(3000);
      const big = randomBytes(6 * MiB + 7);
      writeFileSync(join(dir, 'small.bin'), small);
      writeFileSync(join(dir, 'big.bin'), big);
      const mark = await env.mark();
      await run(['put', join(dir, 'small.bin'), `s3://${bucket}/v2/small.bin`]);
      await run(['put', ...CHUNK, join(dir, 'big.bin'), `s3://${bucket}/v2/big.bin`]);
      expect((await env.head(bucket, 'v2/small.bin')).ETag, `s3cmd v2 (${role}, ${protocol}) put small`).toBe(plainETag(small));
      expect((await env.head(bucket, 'v2/big.bin')).ETag, `s3cmd v2 (${role}, ${protocol}) put multipart`).toBe(multipartETag(big, PART));
      // The writes were this role's: the agent key's PutObject is logged as the agent's.
      // Up to a second mark: request lines are written in batches (--log-flush-ms).
      const writers = env.casket.logs.slice(mark + 1, await env.mark()).flatMap((line) => {
        const entry = JSON.parse(line) as { operation?: string; key?: string; agent?: string };
        return entry.operation === 'PutObject' && entry.key === 'v2/small.bin' ? [entry.agent ?? 'person'] : [];
      });
      expect(writers, `s3cmd v2 (${role}, ${protocol}) writer`).toEqual([role === 'agent' ? env.agentName : 'person']);

      await run(['get', '--force', `s3://${bucket}/v2/small.bin`, join(dir, 'small.down')]);
      await run(['get', '--force', `s3://${bucket}/v2/big.bin`, join(dir, 'big.down')]);
      expect(await sha256File(join(dir, 'small.down')), `s3cmd v2 (${role}, ${protocol}) get small`).toBe(sha256(small));
      expect(await sha256File(join(dir, 'big.down')), `s3cmd v2 (${role}, ${protocol}) get multipart`).toBe(sha256(big));

      const ls = await run(['ls', `s3://${bucket}/v2/`]);
      const rows = ls.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/).slice(2));
      expect(rows, `s3cmd v2 (${role}, ${protocol}) ls`).toEqual([[String(big.length), `s3://${bucket}/v2/big.bin`], [String(small.length), `s3://${bucket}/v2/small.bin`]]);
      const info = await run(['info', `s3://${bucket}/v2/small.bin`]);
      // s3cmd shows the MD5 it recorded in x-amz-meta-s3cmd-attrs at upload.
      expect(/MD5 sum:\s+(\S+)/.exec(info.stdout)?.[1], `s3cmd v2 (${role}, ${protocol}) info`).toBe(createHash('md5').update(small).digest('hex'));

      await run(['del', `s3://${bucket}/v2/small.bin`]);
      expect(await failure(env.head(bucket, 'v2/small.bin')), `s3cmd v2 (${role}, ${protocol}) del`).toMatchObject({ status: 404 });
    });

    it('a wrong secret → refused (403 SignatureDoesNotMatch), nothing written', async () => {
      const wrong = s3cmd(dir, env.endpoint, { ...env.cred(role), secretAccessKey: 'not-the-secret' }, 's3cmd-v2-wrong', true);
      writeFileSync(join(dir, 'refused.bin'), 'refused');
      const r = await wrong.run(['put', join(dir, 'refused.bin'), `s3://${bucket}/v2/refused.bin`]);
      expect(r.code, r.stderr).not.toBe(0);
      expect(r.stderr, `s3cmd v2 (${role}, ${protocol}) wrong secret`).toMatch(/403|SignatureDoesNotMatch/);
      expect(await failure(env.head(bucket, 'v2/refused.bin'))).toMatchObject({ status: 404 });
    });
  });
});
