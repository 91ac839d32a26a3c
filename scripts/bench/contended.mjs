/** The contended phase: agents racing conditional writes on one key. Part of scripts/bench.mjs (the runner). */
import { S3Client, errorCode } from './client.mjs';
import { median, percentile } from './stats.mjs';
import { BUCKET, answers, expectStatus, now, sleep } from './common.mjs';

// ---------------------------------------------------------------- contended

/**
 * N agents (each its own bound access key) run read-modify-write on one key:
 * GET (body + ETag), append the agent's next token, PUT If-Match that ETag;
 * 412 → read again. At the end the object must list exactly the tokens whose
 * PUT returned 200, each once: anything missing is a lost update.
 */
export async function contended(url, admin, agents, key, seconds, signer) {
  const adminClient = new S3Client(url, admin, { signer, maxSockets: 1 });
  const header = Buffer.from('casket-bench counter\n');
  const init = await adminClient.request('PUT', `/${BUCKET}/${key}`, { body: header });
  expectStatus(init, 200, 'contended: initial PutObject');
  const stats = agents.map((a) => ({ agent: a.agent, client: new S3Client(url, a, { signer, maxSockets: 1 }), ok: [], s412: 0, other: 0, lastOther: undefined, lat: [] }));
  const t0 = now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    stats.map(async (s) => {
      let seq = 0;
      while (now() < end) {
        try {
          const g = await s.client.request('GET', `/${BUCKET}/${key}`, { collect: true });
          expectStatus(g, 200, 'contended GetObject');
          const token = `${s.agent}:${seq}\n`;
          const body = Buffer.concat([g.body, Buffer.from(token)]);
          const st = now();
          const p = await s.client.request('PUT', `/${BUCKET}/${key}`, { body, headers: { 'if-match': g.headers.etag } });
          if (p.status === 200) {
            s.ok.push(seq++);
            s.lat.push(now() - st);
          } else if (p.status === 412) s.s412++;
          else {
            s.other++;
            s.lastOther = `HTTP ${p.status} ${errorCode(p.body) ?? ''}`;
          }
        } catch (e) {
          s.other++;
          s.lastOther = e.message;
          await sleep(20);
        }
      }
    }),
  );
  const elapsed = (now() - t0) / 1000;
  const final = await adminClient.request('GET', `/${BUCKET}/${key}`, { collect: true });
  expectStatus(final, 200, 'contended: final GetObject');
  const seen = new Map();
  for (const line of final.body.toString('utf8').split('\n').slice(1)) if (line) seen.set(line, (seen.get(line) ?? 0) + 1);
  let lost = 0;
  let acknowledged = 0;
  for (const s of stats) {
    for (const seq of s.ok) {
      acknowledged++;
      if (!seen.has(`${s.agent}:${seq}`)) lost++;
    }
  }
  const ackSet = new Set(stats.flatMap((s) => s.ok.map((q) => `${s.agent}:${q}`)));
  const phantom = [...seen.keys()].filter((t) => !ackSet.has(t)).length;
  const duplicated = [...seen.values()].filter((c) => c > 1).length;
  const s412 = stats.reduce((a, s) => a + s.s412, 0);
  const other = stats.reduce((a, s) => a + s.other, 0);
  const lat = stats.flatMap((s) => s.lat).sort((a, b) => a - b);
  for (const s of stats) s.client.close();
  adminClient.close();
  return {
    agents: agents.length,
    seconds: elapsed,
    writes: acknowledged,
    writesPerS: acknowledged / elapsed,
    conflicts412: s412,
    share412: s412 / Math.max(1, acknowledged + s412),
    otherErrors: other,
    lastOther: stats.find((s) => s.lastOther)?.lastOther,
    linesInObject: [...seen.values()].reduce((a, c) => a + c, 0),
    lostUpdates: lost,
    phantomWrites: phantom,
    duplicatedTokens: duplicated,
    putP50: percentile(lat, 50),
    putP99: percentile(lat, 99),
  };
}


/**
 * Whether an upstream honours If-Match on PutObject: a wrong ETag refused
 * with 412 and the right one accepted (RGW 16 answers 412 to both, so a
 * refusal alone would pass it and every conditional PUT would fail).
 */
export async function supportsIfMatch(client) {
  try {
    const put = await client.request('PUT', `/${BUCKET}/probe-if-match`, { body: Buffer.from('x') });
    if (put.status !== 200) return false;
    const res = await client.request('PUT', `/${BUCKET}/probe-if-match`, { body: Buffer.from('y'), headers: { 'if-match': '"0000"' } });
    if (res.status !== 412) return false;
    const ok = await client.request('PUT', `/${BUCKET}/probe-if-match`, { body: Buffer.from('z'), headers: { 'if-match': put.headers.etag } });
    return ok.status === 200;
  } catch {
    return false;
  }
}

export function summariseContended(group, target, runs) {
  return {
    group,
    target,
    agents: runs[0]?.agents,
    writesPerS: median(runs.map((r) => r.writesPerS)),
    share412: median(runs.map((r) => r.share412)),
    putP50: median(runs.map((r) => r.putP50)),
    putP99: median(runs.map((r) => r.putP99)),
    lostUpdates: runs.reduce((a, r) => a + r.lostUpdates, 0),
    phantomWrites: runs.reduce((a, r) => a + r.phantomWrites, 0),
    duplicatedTokens: runs.reduce((a, r) => a + r.duplicatedTokens, 0),
    otherErrors: runs.reduce((a, r) => a + r.otherErrors, 0),
    writes: runs.reduce((a, r) => a + r.writes, 0),
    runs,
  };
}
