/**
 * A rollback's restore is a compare-and-swap (docs/design.md §10): sent with
 * If-Match on the agent's last version, so a write that lands between the
 * plan (the key still holds the agent's version) and the restore is never
 * overwritten — it is reported a conflict and stays. Issue 43 found a restore
 * sent without If-Match refused only because agents must write
 * conditionally; here the guard does not insist (--guard observe), and under
 * --agent-writes read-stamp, where the guard would let an unconditional write
 * through on the rollback's own read.
 *
 * A person who writes the agent's very bytes in that instant is not
 * overwritten either: If-Match cannot tell the two versions apart, so the
 * restore also needs the write log's newest entry for the key, read under
 * the key's lock, to still be the agent's (src/rollback/restore.ts).
 *
 * The casket runs in-process (helpers/in-process.ts) so the test can step in
 * at that moment: its retention store, asked for the goal's bytes, first lets
 * a person write the key over HTTP — then the restore goes out.
 */
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { raw } from '../helpers/raw.js';
import type { RollbackAnswer } from '../../src/rollback/plan.js';
import { agentPut, content, keysOf } from './helpers.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

describe('a rollback restore is conditioned on the agent\'s last version', () => {
  it.each([
    ['--guard observe', { guard: 'observe' }, "the person's fix"],
    ['--agent-writes read-stamp', { agentWrites: 'read-stamp' }, "the person's fix"],
    // The person writes alice's very bytes: If-Match cannot tell the two versions apart; the write log
    // under the key's lock can (src/rollback/restore.ts). Before, the restore overwrote the person's write.
    ["the default policy, with the agent's very bytes", {}, "alice's bad edit"],
  ])('under %s a write between plan and restore stays, reported a conflict', async (_name, flags, between) => {
    const c: InProcessCasket = await startInProcess({ agents: ['alice'], keys: ['person'], flags });
    stops.push(() => c.stop());
    const clients: S3Client[] = [sdk(c.url, c.admin), sdk(c.url, c.agents.alice!, { agentHeader: 'alice' }), sdk(c.url, c.keys.person!)];
    stops.push(async () => clients.forEach((x) => x.destroy()));
    const [admin, alice, person] = clients as [S3Client, S3Client, S3Client];
    await admin.send(new CreateBucketCommand({ Bucket: 'restore' }));
    await person.send(new PutObjectCommand({ Bucket: 'restore', Key: 'doc', Body: "the person's text" }));
    const since = new Date().toISOString();
    await agentPut(alice, 'restore', 'doc', "alice's bad edit");

    // Between the plan and the restore: the person writes the key.
    const retainer = c.casket.services.retainer!;
    const get = retainer.get.bind(retainer);
    let stepped = false;
    retainer.get = async (version) => {
      if (!stepped && version.key === 'doc') {
        stepped = true;
        await person.send(new PutObjectCommand({ Bucket: 'restore', Key: 'doc', Body: between }));
      }
      return get(version);
    };

    const res = await raw(c.url, c.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent: 'alice', since, bucket: 'restore' }) });
    expect(res.status).toBe(200);
    const answer = JSON.parse(res.body) as RollbackAnswer;
    expect(stepped).toBe(true);
    expect(keysOf(answer.restored)).toEqual([]);
    expect(keysOf(answer.conflicts)).toEqual(['doc']);
    expect((await content(person, 'restore', 'doc'))?.body.toString()).toBe(between);
  });
});
