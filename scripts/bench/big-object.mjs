/** The big phase: one large object in and out, with peak RSS. Part of scripts/bench.mjs (the runner). */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { S3Client } from './client.mjs';
import { memory, resetPeak, startCasket, stop } from './processes.mjs';
import { fmt, median } from './stats.mjs';
import { BUCKET, MiB, expectStatus, generated, log, now, paths, writeAllFile } from './common.mjs';
import { createBucket, upstreamArgs } from './targets.mjs';

// ---------------------------------------------------------------- big object

/**
 * PUT then GET of one `size`-byte object streamed from a generator (never in
 * memory), against a fresh casket whose RSS is sampled every 20 ms (VmRSS)
 * and read as VmHWM (reset before each transfer when permitted), alternating
 * with a baseline moving the same bytes. On the embedded store the baseline
 * is the disk: the bytes written + fsynced + renamed, and read back, by this
 * process. In front of an upstream (`up`) it is the upstream direct, and the
 * object is deleted after each GET so an upstream with little room (RGW on
 * memstore) holds one copy at a time.
 */
export async function bigObject(opts, env, up) {
  const block = randomBytes(MiB);
  const t0 = now();
  const h = createHash('sha256');
  for (let left = opts.bigSize; left > 0; left -= block.length) h.update(left >= block.length ? block : block.subarray(0, left));
  const hash = h.digest('hex');
  const shaSeconds = (now() - t0) / 1000;
  const where = up ? up.name : 'embedded';
  const dataDir = join(env.tmp, `casket-big-${where}`);
  const casket = await startCasket({
    cli: paths.cli, dataDir, credentialsFile: env.credentialsFile, logFile: join(env.tmp, `casket-big-${where}.log`),
    extraArgs: [...(up ? upstreamArgs(up.url, up.cred) : []), ...opts.casketArgs],
  });
  const pid = casket.pid;
  const clients = [];
  try {
    const client = new S3Client(casket.url, env.admin, { signer: opts.signer, maxSockets: 1 });
    clients.push(client);
    await createBucket(client);
    const idle = memory(pid);
    const runs = [];
    const sampleWhile = async (fn) => {
      const canReset = resetPeak(pid);
      let peak = memory(pid).rss;
      const timer = setInterval(() => {
        try {
          peak = Math.max(peak, memory(pid).rss);
        } catch {}
      }, 20);
      const s = now();
      try {
        await fn();
      } finally {
        clearInterval(timer);
      }
      const seconds = (now() - s) / 1000;
      const m = memory(pid);
      return { seconds, mibPerS: opts.bigSize / MiB / seconds, peakRss: Math.max(peak, canReset ? m.hwm : 0, m.rss), hwmReset: canReset };
    };
    const timed = async (fn) => {
      const s = now();
      await fn();
      const seconds = (now() - s) / 1000;
      return { seconds, mibPerS: opts.bigSize / MiB / seconds };
    };
    const s3Put = (c, key) => async () => {
      const res = await c.request('PUT', `/${BUCKET}/${key}`, { body: generated(opts.bigSize, block), contentLength: opts.bigSize, payloadHash: hash, timeoutMs: 900_000 });
      expectStatus(res, 200, `big PutObject ${key}`);
      if (!up && res.headers.etag !== `"${hash}"`) throw new Error(`big PutObject: ETag ${res.headers.etag}, expected "${hash}"`);
    };
    const s3Get = (c, key) => async () => {
      const gh = createHash('sha256');
      const res = await c.request('GET', `/${BUCKET}/${key}`, { onData: (ch) => gh.update(ch), timeoutMs: 900_000 });
      expectStatus(res, 200, `big GetObject ${key}`);
      const got = gh.digest('hex');
      if (res.bytes !== opts.bigSize || got !== hash) throw new Error(`big GetObject ${key}: ${res.bytes} bytes, sha256 ${got}`);
      if (up) expectStatus(await c.request('DELETE', `/${BUCKET}/${key}`), 204, `big DeleteObject ${key}`);
    };
    const casketPut = () => sampleWhile(s3Put(client, up ? 'c/big' : 'big'));
    const casketGet = () => sampleWhile(s3Get(client, up ? 'c/big' : 'big'));
    let basePut;
    let baseGet;
    if (up) {
      const direct = new S3Client(up.url, up.cred, { signer: opts.signer, maxSockets: 1 });
      clients.push(direct);
      await createBucket(direct);
      basePut = () => timed(s3Put(direct, 'd/big'));
      baseGet = () => timed(s3Get(direct, 'd/big'));
    } else {
      const rawDir = join(env.tmp, 'raw-big');
      mkdirSync(rawDir, { recursive: true });
      const rawFile = join(rawDir, 'big');
      basePut = () =>
        timed(async () => {
          const fh = await open(`${rawFile}.tmp`, 'w');
          for await (const chunk of generated(opts.bigSize, block)) await writeAllFile(fh, chunk);
          await fh.sync();
          await fh.close();
          await rename(`${rawFile}.tmp`, rawFile);
        });
      baseGet = () =>
        timed(async () => {
          const gh = createHash('sha256');
          const fh = await open(rawFile, 'r');
          for await (const chunk of fh.createReadStream({ highWaterMark: MiB })) gh.update(chunk);
          if (gh.digest('hex') !== hash) throw new Error('raw big file read back wrong');
        });
    }
    const baseline = up ? 'direct' : 'disk';
    for (let r = 0; r < opts.runs; r++) {
      const run = {};
      // Alternating, as every cell: the baseline first in even runs.
      if (r % 2 === 0) {
        run.basePut = await basePut();
        run.baseGet = await baseGet();
        run.casketPut = await casketPut();
        run.casketGet = await casketGet();
      } else {
        run.casketPut = await casketPut();
        run.casketGet = await casketGet();
        run.basePut = await basePut();
        run.baseGet = await baseGet();
      }
      runs.push(run);
      log(`    big ${where} run ${r + 1}: PUT ${fmt(run.casketPut.mibPerS)} MiB/s (${baseline} ${fmt(run.basePut.mibPerS)}), GET ${fmt(run.casketGet.mibPerS)} MiB/s (${baseline} ${fmt(run.baseGet.mibPerS)}), peak RSS ${fmt(run.casketPut.peakRss / MiB)} / ${fmt(run.casketGet.peakRss / MiB)} MiB`);
    }
    const med = (f) => median(runs.map(f));
    return {
      where,
      baseline,
      size: opts.bigSize,
      sha256MiBPerS: opts.bigSize / MiB / shaSeconds,
      idleRss: idle.rss,
      put: { casketMiBPerS: med((x) => x.casketPut.mibPerS), baselineMiBPerS: med((x) => x.basePut.mibPerS), peakRss: Math.max(...runs.map((x) => x.casketPut.peakRss)) },
      get: { casketMiBPerS: med((x) => x.casketGet.mibPerS), baselineMiBPerS: med((x) => x.baseGet.mibPerS), peakRss: Math.max(...runs.map((x) => x.casketGet.peakRss)) },
      hwmReset: runs[0]?.casketPut.hwmReset,
      runs,
    };
  } finally {
    for (const c of clients) c.close();
    await stop(casket.child);
  }
}
