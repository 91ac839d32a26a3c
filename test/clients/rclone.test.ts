/**
 * rclone 1.60 (provider Other) through casket, a remote named `casket` in a
 * config file of its own: copy/sync/ls/cat/check/md5sum, small and multipart
 * (`--s3-upload-cutoff 10M --s3-chunk-size 5M`), over HTTP and HTTPS
 * (`--ca-cert`; AWS_CA_BUNDLE unset — it breaks rclone 1.60), as a person and
 * as an agent. rclone cannot send If-Match, so this casket runs
 * `--agent-writes read-stamp`: an agent's write is conditioned on what it last
 * read whole, and a write over someone else's newer version fails (exit 1).
 * rclone only trusts a 32-hex ETag as an MD5: it has an MD5 for its own
 * multipart uploads (x-amz-meta-md5chksum) and none for single-part ones, so
 * `check --download` is the byte-for-byte comparison.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exits, ok, rclone, sha256File } from '../helpers/cli-tools.js';
import { hasCommand, need } from '../helpers/tools.js';
import { MiB, PROTOCOLS, ROLES, multipartETag, plainETag, sha256, startClientCasket, type ClientCasket, type Role } from './harness.js';

const PART = 5 * MiB;
const MULTIPART = ['--s3-upload-cutoff', '10M', '--s3-chunk-size', '5M'];

// In CI a missing tool fails the run (need throws); elsewhere the file is skipped.
const available = need('rclone', hasCommand('rclone'));

describe.runIf(available).each(PROTOCOLS)('rclone over %s', (protocol) => {
  let env: ClientCasket;
  beforeAll(async () => {
    env = await startClientCasket(protocol, { client: 'rclone', agentWrites: 'read-stamp', buckets: ['rclone-person', 'rclone-agent'] });
  });
  afterAll(async () => env?.stop());

  describe.each(ROLES)('as %s', (role: Role) => {
    const bucket = `rclone-${role}`;
    let rc: ReturnType<typeof rclone>;
    let dir: string;
    const who = (command: string) => `rclone (${role}, ${protocol}) ${command}`;
    beforeAll(() => {
      dir = join(env.dir, role);
      mkdirSync(dir, { recursive: true });
      rc = rclone(dir, env.endpoint, env.cred(role));
    });

    it('copy up (small and multipart), ls, cat, md5sum, check, copy down', async () => {
      const src = join(dir, 'src');
      mkdirSync(src, { recursive: true });
      const small = Buffer.from(`small file for ${role} over ${protocol}\n`);
      const big = randomBytes(12 * MiB + 9);
      writeFileSync(join(src, 'small.txt'), small);
      writeFileSync(join(src, 'big.bin'), big);
      ok(await rc.run(['copy', src, `casket:${bucket}/copy`, ...MULTIPART]));
      expect((await env.head(bucket, 'copy/small.txt')).ETag, who('copy small → HeadObject')).toBe(plainETag(small));
      expect((await env.head(bucket, 'copy/big.bin')).ETag, who('copy multipart → HeadObject')).toBe(multipartETag(big, PART));

      const ls = ok(await rc.run(['ls', `casket:${bucket}/copy`]));
      expect(ls.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/)).sort(), who('ls')).toEqual([[String(big.length), 'big.bin'], [String(small.length), 'small.txt']]);

      expect(ok(await rc.run(['cat', `casket:${bucket}/copy/small.txt`])).stdout, who('cat')).toBe(small.toString());

      const md5sum = ok(await rc.run(['md5sum', `casket:${bucket}/copy`]));
      expect(md5sum.stdout, who('md5sum')).toContain(`${createHash('md5').update(big).digest('hex')}  big.bin`);

      const check = ok(await rc.run(['check', src, `casket:${bucket}/copy`]));
      expect(check.stderr, who('check')).toMatch(/0 differences found/);
      const checkDownload = ok(await rc.run(['check', '--download', src, `casket:${bucket}/copy`]));
      expect(checkDownload.stderr, who('check --download')).toMatch(/0 differences found/);
      expect(checkDownload.stderr).toMatch(/2 matching files/);

      const down = join(dir, 'down');
      ok(await rc.run(['copy', `casket:${bucket}/copy`, down]));
      expect(await sha256File(join(down, 'small.txt')), who('copy down small')).toBe(sha256(small));
      expect(await sha256File(join(down, 'big.bin')), who('copy down multipart')).toBe(sha256(big));
    });

    it('sync twice: the second copies nothing', async () => {
      const src = join(dir, 'tree');
      mkdirSync(join(src, 'sub'), { recursive: true });
      const files: Record<string, Buffer> = { 'a.txt': Buffer.from('alpha\n'), 'sub/b.bin': randomBytes(11 * MiB), 'sub/c d.txt': Buffer.from('with a space\n') };
      for (const [name, data] of Object.entries(files)) writeFileSync(join(src, name), data);

      const first = await env.mark();
      ok(await rc.run(['sync', src, `casket:${bucket}/sync`, ...MULTIPART]));
      expect((await env.writesSince(first, bucket)).filter((w) => !w.startsWith('UploadPart')), who('first sync')).toHaveLength(3);
      expect((await env.head(bucket, 'sync/sub/b.bin')).ETag).toBe(multipartETag(files['sub/b.bin']!, PART));

      const second = await env.mark();
      const again = ok(await rc.run(['sync', src, `casket:${bucket}/sync`, ...MULTIPART, '-v']));
      expect(await env.writesSince(second, bucket), `${who('second sync')}: ${again.stderr}`).toEqual([]);
      expect(ok(await rc.run(['check', src, `casket:${bucket}/sync`])).stderr, who('check after sync')).toMatch(/0 differences found/);
    });

    it(role === 'agent' ? 'agent: a write over a version it has not read fails with exit 1 and writes nothing' : 'person: a write over a newer version replaces it (plain S3)', async () => {
      const key = 'cas/notes.txt';
      const local = join(dir, 'notes.txt');
      writeFileSync(local, 'notes v1\n');
      ok(await rc.run(['copyto', local, `casket:${bucket}/${key}`]));
      expect(ok(await rc.run(['cat', `casket:${bucket}/${key}`])).stdout).toBe('notes v1\n');

      const other = await env.overwrite(bucket, key, 'notes v2, by someone else\n');
      writeFileSync(local, 'notes v3 from rclone\n');
      const write = await rc.run(['copyto', local, `casket:${bucket}/${key}`]);
      if (role === 'agent') {
        exits(write, 1);
        expect(write.stderr, who('copyto over a version it has not read')).toMatch(/PreconditionFailed/);
        expect((await env.head(bucket, key)).ETag, 'nothing was written').toBe(other);
        // Read the new version whole, and the same write goes through.
        expect(ok(await rc.run(['cat', `casket:${bucket}/${key}`])).stdout).toBe('notes v2, by someone else\n');
        ok(await rc.run(['copyto', local, `casket:${bucket}/${key}`]));
      } else {
        ok(write);
      }
      expect((await env.head(bucket, key)).ETag, who('copyto')).toBe(plainETag(Buffer.from('notes v3 from rclone\n')));
    });
  });
});
