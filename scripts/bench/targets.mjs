/** What a cell is measured against: S3 targets (casket, an upstream, a baseline proxy), the raw disk, SHA-256 alone; and the payload forms each upstream takes. Part of scripts/bench.mjs (the runner). */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { S3Client, errorCode } from './client.mjs';
import { sha256hex } from './signer.mjs';
import { encodePayload } from './payload.mjs';
import { BUCKET, MiB, bodyPool, expectStatus, log, writeAllFile } from './common.mjs';

// ---------------------------------------------------------------- targets

/**
 * An S3 endpoint as a target: PUT/GET/conditional PUT workers on keys under
 * `prefix`. PUT bodies go in the form `cell.sent[name]` (a baseline's
 * fallback when its upstream refuses the cell's form), else `cell.payload`.
 */
export function s3Target(name, { url, cred, bucket = BUCKET, prefix, pid, signer, mode = 'plain', getPrefix }) {
  return {
    name,
    /** 4 KiB PutObject + GetObject at c=8 for `seconds`, unmeasured: see --warmup. */
    async warm(seconds) {
      const client = new S3Client(url, cred, { signer, maxSockets: 8 });
      const pool = bodyPool(4096);
      const end = performance.now() + seconds * 1000;
      try {
        await Promise.all(
          Array.from({ length: 8 }, async (_, w) => {
            const path = `/${bucket}/${prefix}warm/w${w}`;
            for (let n = w; performance.now() < end; n++) {
              const b = pool[n % pool.length];
              expectStatus(await client.request('PUT', path, { body: b.buf, payloadHash: b.hash, timeoutMs: 30_000 }), 200, 'PutObject (warm-up)');
              expectStatus(await client.request('GET', path, { timeoutMs: 30_000 }), 200, 'GetObject (warm-up)');
            }
          }),
        );
      } finally {
        client.close();
      }
    },
    async prepare(cell) {
      const client = new S3Client(url, cred, { signer, maxSockets: cell.conc });
      const timeoutMs = cell.size > 64 * MiB ? 600_000 : 120_000;
      const pool = bodyPool(cell.size);
      let workers;
      if (cell.op === 'CopyObject') {
        // A server-side copy of a preloaded object onto a key of the worker's own (preloadGets wrote the source).
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const source = `/${bucket}/${getPrefix ?? prefix}get/${cell.size}/${w}`;
          const path = `/${bucket}/${prefix}copy/${cell.size}/w${w}`;
          return async () => {
            const res = await client.request('PUT', path, { headers: { 'x-amz-copy-source': source }, collect: true, timeoutMs });
            expectStatus(res, 200, 'CopyObject');
            if (res.body.includes('<Error>')) throw new Error(`CopyObject: 200 with an error body ${errorCode(res.body)}`);
            return cell.size;
          };
        });
      } else if (cell.op === 'ListObjectsV2' || cell.op === 'ListObjectVersions') {
        // One page of `cell.keys` keys (preloadList wrote them).
        workers = Array.from({ length: cell.conc }, () => {
          // cell.versions: ListObjectVersions of the same keys (ab.mjs --op versions, a versioned bucket).
          const path = `/${bucket}?${cell.versions ? 'versions' : 'list-type=2'}&max-keys=1000&prefix=${encodeURIComponent(`${getPrefix ?? prefix}list/`)}`;
          return async () => {
            const res = await client.request('GET', path, { collect: true, timeoutMs });
            expectStatus(res, 200, cell.op);
            const n = res.body.toString('utf8').split('<Key>').length - 1;
            if (n !== cell.keys) throw new Error(`${cell.op}: ${n} keys, expected ${cell.keys}`);
            return res.bytes;
          };
        });
      } else if (cell.op === 'GetObject') {
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const path = `/${bucket}/${getPrefix ?? prefix}get/${cell.size}/${w}`;
          return async () => {
            const res = await client.request('GET', path, { timeoutMs });
            expectStatus(res, 200, 'GetObject');
            if (res.bytes !== cell.size) throw new Error(`GetObject: ${res.bytes} bytes, expected ${cell.size}`);
            return res.bytes;
          };
        });
      } else {
        const conditional = mode === 'conditional';
        const etags = new Array(cell.conc);
        const keyOf = (w) => `/${bucket}/${prefix}${conditional ? 'cond' : cell.kind === 'cond' ? 'uncond' : 'put'}/${cell.size}/w${w}`;
        if (conditional) {
          // Each worker owns a key and tracks its ETag.
          await Promise.all(
            Array.from({ length: cell.conc }, async (_, w) => {
              const b = pool[w % pool.length];
              const res = await client.request('PUT', keyOf(w), { body: b.buf, payloadHash: b.hash, timeoutMs });
              expectStatus(res, 200, 'PutObject (setup)');
              etags[w] = res.headers.etag;
            }),
          );
        }
        const form = cell.sent?.[name] ?? cell.payload ?? 'signed';
        // Encode every pooled body before the clock starts (cached across cells).
        for (const b of pool) encodePayload(b, form);
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const path = keyOf(w);
          let n = w;
          return async () => {
            const b = pool[n++ % pool.length];
            const e = encodePayload(b, form);
            const headers = conditional ? { ...e.headers, 'if-match': etags[w] } : e.headers;
            const res = await client.request('PUT', path, { body: e.body, payloadHash: e.payloadHash, chunked: e.chunked, headers, timeoutMs });
            expectStatus(res, 200, conditional ? 'PutObject If-Match' : 'PutObject');
            if (conditional) etags[w] = res.headers.etag;
            return b.buf.length;
          };
        });
      }
      return { workers, pid, done: () => client.close() };
    },
  };
}

/** The raw cost of the disk: write + fsync + rename (GET: read back) in `dir`. */
export function diskTarget(dir) {
  mkdirSync(dir, { recursive: true });
  return {
    name: 'disk',
    async prepare(cell) {
      const pool = bodyPool(cell.size);
      let workers;
      if (cell.op === 'GetObject') {
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const file = join(dir, `get-${cell.size}-${w}`);
          return async () => (await readFile(file)).length;
        });
      } else {
        workers = Array.from({ length: cell.conc }, (_, w) => {
          const file = join(dir, `put-${cell.size}-w${w}`);
          let n = w;
          return async () => {
            const b = pool[n++ % pool.length];
            const fh = await open(`${file}.tmp`, 'w');
            try {
              await writeAllFile(fh, b.buf);
              await fh.sync();
            } finally {
              await fh.close();
            }
            await rename(`${file}.tmp`, file);
            return b.buf.length;
          };
        });
      }
      return { workers };
    },
    async preload(size, count) {
      const pool = bodyPool(size);
      for (let i = 0; i < count; i++) {
        const fh = await open(join(dir, `get-${size}-${i}`), 'w');
        await writeAllFile(fh, pool[i % pool.length].buf);
        await fh.sync();
        await fh.close();
      }
    },
  };
}

/** SHA-256 of the same bytes on this CPU, one core (the floor of any hashing store). */
export function shaTarget() {
  return {
    name: 'sha256',
    async prepare(cell) {
      const pool = bodyPool(cell.size);
      let n = 0;
      // One worker whatever the cell's concurrency: hashing is one core's work.
      const op = async () => {
        const b = pool[n++ % pool.length];
        createHash('sha256').update(b.buf).digest();
        return b.buf.length;
      };
      return { workers: [op] };
    },
  };
}

export function upstreamArgs(url, cred) {
  return ['--upstream', url, '--upstream-access-key', cred.accessKeyId, '--upstream-secret-key', cred.secretAccessKey];
}

/**
 * Whether each target takes each PutObject body form: one PUT of a body
 * spanning several 64 KiB chunks, then a GET that must return the same bytes
 * (a 200 that stored the aws-chunked framing is a refusal too). Memoised:
 * accepts(target, form) → Promise<{ok, why?}>.
 */
export function formProber(clients, prefixes) {
  const memo = new Map();
  const buf = randomBytes(200 * 1024 + 17);
  const b = { buf, hash: sha256hex(buf) };
  const probe = async (target, form) => {
    const client = clients[target];
    const key = `/${BUCKET}/${prefixes[target]}probe/${form}`;
    try {
      const e = encodePayload(b, form);
      const res = await client.request('PUT', key, { body: e.body, payloadHash: e.payloadHash, chunked: e.chunked, headers: e.headers, timeoutMs: 30_000 });
      if (res.status !== 200) return { ok: false, why: `HTTP ${res.status} ${errorCode(res.body) ?? ''}`.trim() };
      const g = await client.request('GET', key, { collect: true, timeoutMs: 30_000 });
      if (g.status !== 200 || !g.body.equals(buf)) return { ok: false, why: `PUT 200, but GET gave HTTP ${g.status} and ${g.bytes} bytes that are not the ones sent` };
      return { ok: true };
    } catch (e) {
      return { ok: false, why: e.message };
    }
  };
  const accepts = (target, form) => {
    const k = `${target} ${form}`;
    if (!memo.has(k)) memo.set(k, probe(target, form));
    return memo.get(k);
  };
  accepts.has = (target) => Boolean(clients[target]);
  return accepts;
}

/** What a baseline sends when its upstream refuses a form: the same bytes in the nearest form it takes. */
export const FALLBACK = { 'chunked-crc32': ['chunked-crc32-length', 'unsigned', 'signed'], unsigned: ['signed'], signed: [] };

/**
 * Which targets a PutObject cell in `form` runs, and what each sends.
 * Direct refusing the form: direct leaves the cell and casket is compared
 * with nginx only, nginx sending the nearest form the upstream
 * takes (nginx passes the body through, so it is refused whenever the
 * upstream is). Without nginx, direct sends that fallback instead. Casket
 * refusing the form: casket leaves the cell, and the refusal is reported.
 */
export async function planForm(form, accepts, upName, report) {
  const say = (text) => {
    if (!report.notes.includes(text)) report.notes.push(text);
    log(`   ${text}`);
  };
  const targets = [];
  const sent = {};
  const fallback = async (target) => {
    for (const f of FALLBACK[form]) if ((await accepts(target, f)).ok) return f;
    return undefined;
  };
  const d = await accepts('direct', form);
  if (d.ok) targets.push('direct');
  else {
    let why = d.why;
    if (form === 'chunked-crc32') {
      const l = await accepts('direct', 'chunked-crc32-length');
      why += l.ok ? '; it takes the same body with its exact Content-Length' : `; with its exact Content-Length instead of Transfer-Encoding: chunked, ${l.why}`;
    }
    if (accepts.has('nginx')) say(`${upName} direct refuses ${form} (${why}): ${form} cells compare casket with the proxies only`);
    else {
      const f = await fallback('direct');
      say(`${upName} direct refuses ${form} (${why}); no nginx: direct sends ${f ?? 'nothing (left out)'} in ${form} cells`);
      if (f) {
        targets.push('direct');
        sent.direct = f;
      }
    }
  }
  for (const proxy of ['nginx', 'node', 'undici']) {
    if (!accepts.has(proxy)) continue;
    const n = await accepts(proxy, form);
    if (n.ok) targets.push(proxy);
    else {
      const f = await fallback(proxy);
      say(`${proxy} → ${upName} refuses ${form} (${n.why}): ${proxy} sends ${f ? `the same bytes as ${f}` : 'nothing (left out)'} in ${form} cells`);
      if (f) {
        targets.push(proxy);
        sent[proxy] = f;
      }
    }
  }
  if (accepts.has('casket')) {
    const c = await accepts('casket', form);
    if (c.ok) targets.push('casket');
    else {
      say(`casket → ${upName} refuses ${form} (${c.why}): left out of ${form} cells`);
      report.refusals.push({ upstream: upName, target: 'casket', form, why: c.why });
    }
  }
  const ref = ['direct', 'nginx', 'node', 'undici', 'casket'].find((x) => targets.includes(x));
  return { targets, sent, ref };
}

export async function preloadGets(client, prefix, size, count) {
  const pool = bodyPool(size);
  for (let i = 0; i < count; i++) {
    const b = pool[i % pool.length];
    const res = await client.request('PUT', `/${BUCKET}/${prefix}get/${size}/${i}`, { body: b.buf, payloadHash: b.hash, timeoutMs: 120_000 });
    expectStatus(res, 200, `preload ${prefix}get/${size}/${i}`);
  }
}

/** `count` empty objects under `prefix`list/, 8 PUTs at a time (skipped when a listing already shows them all). */
export async function preloadList(client, prefix, count, bucket = BUCKET) {
  const listed = await client.request('GET', `/${bucket}?list-type=2&max-keys=1000&prefix=${encodeURIComponent(`${prefix}list/`)}`, { collect: true, timeoutMs: 60_000 });
  if (listed.status === 200 && listed.body.toString('utf8').split('<Key>').length - 1 === count) return;
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < count; i = next++) {
        const res = await client.request('PUT', `/${bucket}/${prefix}list/${String(i).padStart(5, '0')}`, { body: Buffer.alloc(0), timeoutMs: 60_000 });
        expectStatus(res, 200, `preload ${prefix}list/${i}`);
      }
    }),
  );
}

export async function createBucket(client, bucket = BUCKET) {
  const res = await client.request('PUT', `/${bucket}`);
  if (res.status !== 200 && !['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes(errorCode(res.body))) expectStatus(res, 200, 'CreateBucket');
}
