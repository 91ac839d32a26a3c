/**
 * The changeset race of issue 39's acceptance, judged by a checker rather
 * than by eye (test/changesets/race.test.ts on one casket,
 * test/changesets/shared-state.test.ts on several caskets sharing Redis).
 *
 * Seven counter keys k0..k6. Two writers each run `rounds` rounds of a 5-file
 * changeset over overlapping keys (writer a: k0..k4, writer b: k2..k6): read
 * each key (version V, value n), commit n + 1 to every key conditioned on V
 * (If-Match) through POST /_casket/commit. Each content names its changeset.
 * Meanwhile a third writer increments k3 alone with single conditional
 * PutObjects (If-Match), and readers read k0..k6 in order, again and again.
 * Each of them goes through the casket the caller names (several caskets:
 * writer a through one, writer b through another, readers on both).
 *
 * Judged:
 *   - per key, every acknowledged entry forms one chain from the first
 *     version to the last (helpers/history.ts checkChain): no entry of an
 *     acknowledged changeset was lost or forked, and the final value counts
 *     exactly the acknowledged changesets that touched the key;
 *   - a single write is ordered before or after a whole changeset: none
 *     lands between a changeset's check and its entries (the changeset's
 *     entry would then fail, half applied: every commit must answer 200 or 412);
 *   - a refused changeset wrote nothing: no reader and no final read ever
 *     shows a changeset that was not acknowledged;
 *   - no reader saw a mix: once a reader saw changeset X on one key, each
 *     later read of another key of X shows X's value or a newer one (a
 *     reader that saw X's new k0 and then the old k1 saw X half applied).
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Cred } from './casket.js';
import { commit } from './changeset.js';
import { bytes, sdk } from './clients.js';
import { checkChain, type AckedWrite } from './history.js';

export const KEYS = Array.from({ length: 7 }, (_, i) => `k${i}`);
const WRITERS = { a: KEYS.slice(0, 5), b: KEYS.slice(2, 7) };

interface Content {
  v: number;
  cs: string;
}

interface Read {
  key: string;
  etag: string;
  content: Content;
}

/** A casket and the key to use it with. */
export interface Through {
  url: string;
  cred: Cred;
}

export interface RaceOptions {
  bucket: string;
  rounds: number;
  writers: { a: Through; b: Through };
  single: Through;
  /** One per reader: the casket it reads the i-th key of a pass through. */
  readers: Array<(i: number) => Through>;
}

export interface RaceResult {
  problems: string[];
  /** Acknowledged changesets. */
  changesets: number;
  /** Acknowledged changesets and single writes. */
  acknowledged: number;
  refused: number;
  passes: number;
}

async function read(s3: S3Client, bucket: string, key: string): Promise<Read> {
  for (let attempt = 1; ; attempt++) {
    try {
      const o = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return { key, etag: o.ETag!, content: JSON.parse((await bytes(o.Body)).toString()) as Content };
    } catch (e) {
      // moto answers a rare 500 under concurrent load (casket relays it as InternalError): a read is safe to repeat.
      if (attempt >= 3 || ((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0) < 500) throw e;
    }
  }
}

export async function raceChangesets(o: RaceOptions): Promise<RaceResult> {
  const { bucket, rounds } = o;
  const clients = new Map<string, S3Client>();
  const client = (t: Through) => {
    const id = `${t.url} ${t.cred.accessKeyId}`;
    let c = clients.get(id);
    if (!c) clients.set(id, (c = sdk(t.url, t.cred)));
    return c;
  };
  const s3 = client(o.writers.a);
  await s3.send(new CreateBucketCommand({ Bucket: bucket })).catch((e: { name?: string }) => {
    if (e.name !== 'BucketAlreadyOwnedByYou') throw e;
  });
  const initial = new Map<string, Read>();
  for (const key of KEYS) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify({ v: 0, cs: 'init' }) }));
    initial.set(key, await read(s3, bucket, key));
  }
  const problems: string[] = [];
  const acks = new Map<string, AckedWrite[]>(KEYS.map((k) => [k, []]));
  /** What each acknowledged changeset wrote: key → value. */
  const landed = new Map<string, Map<string, number>>([['init', new Map(KEYS.map((k) => [k, 0]))]]);
  let refused = 0;
  let done = false;
  const writer = async (name: 'a' | 'b') => {
    const through = o.writers[name];
    const mine = client(through);
    for (let round = 0; round < rounds; round++) {
      const cs = `${name}${round}`;
      const seen = await Promise.all(WRITERS[name].map((k) => read(mine, bucket, k)));
      const res = await commit(through.url, through.cred, bucket, seen.map((r) => ({ key: r.key, body: JSON.stringify({ v: r.content.v + 1, cs }), 'if-match': r.etag })));
      if (res.status === 412) {
        refused++;
        continue;
      }
      if (res.status !== 200) {
        problems.push(`changeset ${cs} answered ${res.status}: ${JSON.stringify(res.json)}`);
        continue;
      }
      landed.set(cs, new Map(seen.map((r) => [r.key, r.content.v + 1])));
      for (const [i, r] of seen.entries()) acks.get(r.key)!.push({ writer: cs, from: r.etag, to: res.json.landed![i]!.etag!, value: r.content.v + 1 });
    }
  };
  const single = async () => {
    const mine = client(o.single);
    for (let round = 0; round < rounds; round++) {
      const cs = `s${round}`;
      const r = await read(mine, bucket, 'k3');
      const put = await mine.send(new PutObjectCommand({ Bucket: bucket, Key: 'k3', Body: JSON.stringify({ v: r.content.v + 1, cs }), IfMatch: r.etag })).catch((e: { name?: string }) => {
        if (e.name === 'PreconditionFailed') return undefined;
        throw e;
      });
      if (!put) continue;
      landed.set(cs, new Map([['k3', r.content.v + 1]]));
      acks.get('k3')!.push({ writer: cs, from: r.etag, to: put.ETag!, value: r.content.v + 1 });
    }
  };
  const passes: Read[][] = [];
  const reader = async (through: (i: number) => Through) => {
    while (!done) {
      const pass: Read[] = [];
      for (const [i, key] of KEYS.entries()) pass.push(await read(client(through(i)), bucket, key));
      passes.push(pass);
    }
  };
  const readers = o.readers.map(reader);
  try {
    await Promise.all([writer('a'), writer('b'), single()]);
  } finally {
    done = true;
    await Promise.allSettled(readers);
  }
  await Promise.all(readers);

  for (const key of KEYS) {
    const last = await read(s3, bucket, key);
    const verdict = checkChain({ etag: initial.get(key)!.etag, value: 0 }, acks.get(key)!, { etag: last.etag, value: last.content.v });
    problems.push(...verdict.problems.map((p) => `${key}: ${p}`));
    if (!landed.has(last.content.cs)) problems.push(`${key} ends at changeset ${last.content.cs}, which was not acknowledged`);
  }
  for (const pass of passes) {
    for (const [i, r] of pass.entries()) {
      const wrote = landed.get(r.content.cs);
      if (!wrote) {
        problems.push(`a reader saw ${r.key} from changeset ${r.content.cs}, which was not acknowledged`);
        continue;
      }
      for (const later of pass.slice(i + 1)) {
        const floor = wrote.get(later.key);
        if (floor !== undefined && later.content.v < floor) problems.push(`mix: a reader saw ${r.key} of ${r.content.cs}, then ${later.key} at ${later.content.v} (${later.content.cs}), older than ${r.content.cs}'s ${floor}`);
      }
    }
  }
  for (const c of clients.values()) c.destroy();
  return { problems, changesets: [...landed.keys()].filter((k) => /^[ab]/.test(k)).length, acknowledged: landed.size - 1, refused, passes: passes.length };
}
