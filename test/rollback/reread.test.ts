/**
 * A restore refused at its compare-and-swap (someone wrote the key between
 * the plan and the restore) is a conflict, and the rollback reads the key
 * again to say what is there now (src/rollback/apply.ts, settled;
 * src/rollback/changeset.ts). When that read fails too, the answer must not
 * say the key was deleted (`currentETag: null` is "no version", docs/operating.md
 * "Conflicts"): the current version is unknown, and the conflict says why
 * (`currentUnread`), with no currentETag at all.
 *
 * In-process casket (helpers/in-process.ts): the retention store, asked for
 * the goal's bytes, lets a person write the key first, then makes the
 * backend fail every GET of it (as an upstream answering 500 would; the
 * rollback retries a read twice, so all three fail).
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { commit } from '../helpers/changeset.js';
import type { InProcessCasket } from '../helpers/in-process.js';
import { agentPut, content, inProcessWithBucket, keysOf, postRollback } from './helpers.js';

const bucket = 'reread';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

/** When the goal of `goalKey` is asked for: `write` runs, then every GET of `failKey` (if any) fails. */
function stepIn(c: InProcessCasket, goalKey: string, failKey: string | undefined, write: () => Promise<unknown>): { stepped: () => boolean } {
  const retainer = c.casket.services.retainer!;
  const get = retainer.get.bind(retainer);
  const backend = c.casket.services.backend;
  const getObject = backend.getObject.bind(backend);
  let stepped = false;
  retainer.get = async (version) => {
    if (!stepped && version.key === goalKey) {
      stepped = true;
      await write();
      backend.getObject = async (b, k, v) => {
        if (k === failKey) throw new Error('the backend is down (test)');
        return getObject(b, k, v);
      };
    }
    return get(version);
  };
  stops.push(async () => {
    retainer.get = get;
    backend.getObject = getObject;
  });
  return { stepped: () => stepped };
}

describe('a refused restore whose key cannot be read again', () => {
  it('is a conflict whose current version is unknown, not deleted', async () => {
    const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice']);
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'doc', Body: "the person's text" }));
    const since = new Date().toISOString();
    await agentPut(agents.alice!, bucket, 'doc', "alice's bad edit");
    const step = stepIn(c, 'doc', 'doc', () => person.send(new PutObjectCommand({ Bucket: bucket, Key: 'doc', Body: "the person's fix" })));

    const answer = await postRollback(c, { agent: 'alice', since, bucket });
    expect(step.stepped()).toBe(true);
    expect(keysOf(answer.restored)).toEqual([]);
    expect(keysOf(answer.conflicts)).toEqual(['doc']);
    const [conflict] = answer.conflicts;
    expect(conflict).not.toHaveProperty('currentETag');
    expect(conflict!.currentUnread).toBe('InternalError');
    expect(conflict!.agentETag).toMatch(/^"[0-9a-f]{64}"$/);
  });

  it('when it can be read, it is read as nobody: the rollback agent\'s read stamp stays on the version the plan read', async () => {
    // The read that reports the conflict is no read the rollback writes on (docs/design.md §4): a stamp of the
    // person's version would let rollback:alice's next write over it pass as informed by a read.
    const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice']);
    await person.send(new PutObjectCommand({ Bucket: bucket, Key: 'doc', Body: "the person's text" }));
    const since = new Date().toISOString();
    const alices = await agentPut(agents.alice!, bucket, 'doc', "alice's bad edit");
    const step = stepIn(c, 'doc', undefined, () => person.send(new PutObjectCommand({ Bucket: bucket, Key: 'doc', Body: "the person's fix" })));

    const answer = await postRollback(c, { agent: 'alice', since, bucket });
    expect(step.stepped()).toBe(true);
    const persons = (await content(person, bucket, 'doc'))!.etag;
    expect(answer.conflicts).toMatchObject([{ key: 'doc', agentETag: alices, currentETag: persons }]);
    expect((await c.casket.services.state.getStamp('rollback:alice', bucket, 'doc'))?.etag).toBe(alices.replace(/"/g, ''));
  });

  it('in a changeset rollback too: the refused key unknown, the others not restored', async () => {
    const { c, agents, person } = await inProcessWithBucket(bucket, stops, ['alice']);
    const etags: Record<string, string> = {};
    for (const n of ['a', 'b']) {
      await person.send(new PutObjectCommand({ Bucket: bucket, Key: `${n}.txt`, Body: `${n}0` }));
      etags[n] = (await content(agents.alice!, bucket, `${n}.txt`))!.etag;
    }
    const r = await commit(c.url, c.agents.alice!, bucket, [
      { key: 'a.txt', body: 'a1', 'if-match': etags.a },
      { key: 'b.txt', body: 'b1', 'if-match': etags.b },
    ]);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    // Asked for b's old bytes (the plan has judged a already): the person writes a, and a can no longer be read.
    const step = stepIn(c, 'b.txt', 'a.txt', () => person.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: "the person's a" })));

    const answer = await postRollback(c, { changeset: r.json.changeset! });
    expect(step.stepped()).toBe(true);
    expect(answer.restored).toEqual([]);
    expect(keysOf(answer.conflicts)).toEqual(['a.txt']);
    expect(answer.conflicts[0]).not.toHaveProperty('currentETag');
    expect(answer.conflicts[0]!.currentUnread).toBe('InternalError');
    expect(keysOf(answer.notRestored!)).toEqual(['b.txt']);
  });
});
