#!/usr/bin/env node
/**
 * What a changeset costs (issue 39, item 5): one 10-file changeset of 4 KiB
 * files (POST /_casket/commit, each entry with If-Match) against ten single
 * conditional PutObjects (If-Match) of the same files, one after another,
 * in the same run, alternating A B B A so drift hits both. One casket
 * (dist/cli.js) on 127.0.0.1, one client; on the embedded store, or in front
 * of an upstream given as casket's own flags.
 *
 *   node scripts/bench/changeset.mjs [--rounds 200]
 *       [--upstream URL --upstream-access-key K --upstream-secret-key S]
 *
 * Prints the median and p90 milliseconds per 10 files for each, their ratio,
 * the load average, and the apply window: from the changeset's decision to
 * its last entry applied (casket's 'changeset committed' log line, applyMs),
 * the time in which a reader going straight to the upstream can see it half
 * applied. Every process it starts is stopped by PID.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from './client.mjs';
import { paths, randomCred } from './common.mjs';
import { startCasket, stopAll } from './processes.mjs';

const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1] || 200) || 200;
const FILES = 10;
const SIZE = 4096;
const flag = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const upstream = flag('--upstream');
const upstreamArgs = upstream ? ['--upstream', upstream, '--upstream-access-key', flag('--upstream-access-key') ?? '', '--upstream-secret-key', flag('--upstream-secret-key') ?? ''] : [];
// A bucket of its own: an upstream outlives the run.
const bucket = `bench-cs-${randomBytes(4).toString('hex')}`;
const sha = (b) => createHash('sha256').update(b).digest('hex');

function multipart(entries) {
  const boundary = `bench${randomBytes(8).toString('hex')}`;
  const manifest = { entries: entries.map((e) => ({ key: e.key, 'if-match': e.ifMatch })) };
  const parts = [Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n${JSON.stringify(manifest)}\r\n`)];
  entries.forEach((e, i) => parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${i}"; filename="${i}"\r\n\r\n`), e.body, Buffer.from('\r\n')));
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'casket-bench-cs-'));
  const admin = randomCred('BENCHADMIN');
  const credentialsFile = join(tmp, 'credentials.json');
  writeFileSync(credentialsFile, JSON.stringify({ credentials: [{ accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey, admin: true }] }), { mode: 0o600 });
  try {
    const logFile = join(tmp, 'casket.log');
    const casket = await startCasket({ cli: paths.cli, dataDir: join(tmp, 'data'), credentialsFile, logFile, extraArgs: upstreamArgs });
    const s3 = new S3Client(casket.url, admin);
    if ((await s3.request('PUT', `/${bucket}`)).status !== 200) throw new Error('CreateBucket failed');
    const current = { single: new Map(), changeset: new Map() };
    for (const kind of ['single', 'changeset']) {
      for (let i = 0; i < FILES; i++) {
        const key = `${kind}/f${i}`;
        const body = randomBytes(SIZE);
        const r = await s3.request('PUT', `/${bucket}/${key}`, { body });
        if (r.status !== 200) throw new Error(`seed ${key}: ${r.status}`);
        current[kind].set(key, sha(body));
      }
    }
    const singles = async () => {
      const t = process.hrtime.bigint();
      for (const [key, etag] of current.single) {
        const body = randomBytes(SIZE);
        const r = await s3.request('PUT', `/${bucket}/${key}`, { body, headers: { 'if-match': `"${etag}"` } });
        if (r.status !== 200) throw new Error(`PutObject ${key}: ${r.status} ${r.body}`);
        current.single.set(key, sha(body));
      }
      return Number(process.hrtime.bigint() - t) / 1e6;
    };
    const changeset = async () => {
      const entries = [...current.changeset].map(([key, etag]) => ({ key, ifMatch: `"${etag}"`, body: randomBytes(SIZE) }));
      const { body, contentType } = multipart(entries);
      const t = process.hrtime.bigint();
      const r = await s3.request('POST', `/_casket/commit?bucket=${bucket}`, { body, headers: { 'content-type': contentType } });
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      if (r.status !== 200) throw new Error(`commit: ${r.status} ${r.body}`);
      for (const e of entries) current.changeset.set(e.key, sha(e.body));
      return ms;
    };
    for (let i = 0; i < 10; i++) (await singles(), await changeset()); // warm-up
    const a = [];
    const b = [];
    for (let i = 0; i < rounds; i++) {
      if (i % 2 === 0) (a.push(await singles()), b.push(await changeset()));
      else (b.push(await changeset()), a.push(await singles()));
    }
    const row = (name, xs) => `${name.padEnd(34)} median ${pct(xs, 0.5).toFixed(2)} ms  p90 ${pct(xs, 0.9).toFixed(2)} ms`;
    console.log(`${rounds} rounds, ${FILES} files of ${SIZE} bytes, ${upstream ? `in front of ${upstream}` : 'embedded store'}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    console.log(row('10 conditional PutObjects', a));
    console.log(row('1 changeset of 10 (/_casket/commit)', b));
    console.log(`ratio (changeset / singles), medians: ${(pct(b, 0.5) / pct(a, 0.5)).toFixed(2)}`);
    const windows = readFileSync(logFile, 'utf8').split('\n').filter((l) => l.includes('"changeset committed"')).map((l) => JSON.parse(l).applyMs).filter((x) => typeof x === 'number');
    if (windows.length) console.log(row('apply window (decision → last entry)', windows));
    s3.close();
  } finally {
    await stopAll();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
