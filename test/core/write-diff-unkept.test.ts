/**
 * The diff link of a refusal (x-casket-diff, docs/design.md §6) is given only
 * when casket kept the version the agent last read: a link to a diff that
 * cannot be made would send the agent to an error. Here --retain-max-size is
 * 64 bytes, so a larger version an agent reads is never kept, and a refusal
 * that follows a change to it links nothing; a small one still links.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cred } from '../helpers/casket.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { until } from '../helpers/poll.js';
import { raw, xmlField } from '../helpers/raw.js';

const bucket = 'unkept';
let casket: InProcessCasket;
let alice: Cred;

beforeAll(async () => {
  casket = await startInProcess({ agents: ['alice'], flags: { retainMaxSize: '64' } });
  alice = casket.agents.alice!;
  await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  await casket?.stop();
});

const put = (who: Cred, key: string, body: string, headers: Record<string, string> = {}) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, headers, body });
const hex = (quoted: string) => quoted.slice(1, -1);

/** alice reads `key` whole; casket records the read after the response. */
async function read(key: string): Promise<string> {
  const r = await raw(casket.url, alice, { method: 'GET', path: `/${bucket}/${key}` });
  await until(async () => (await casket.casket.services.state.getStamp('alice', bucket, key))?.etag === hex(r.headers.etag as string), `alice's read of ${key} to be recorded`);
  return r.headers.etag as string;
}

describe('the diff link and what casket kept', () => {
  it('a version small enough to keep: the 428 after a person changed it links the diff from it', async () => {
    await put(casket.admin, 'small.md', 'line 1\n');
    const v1 = await read('small.md');
    await until(async () => (await casket.casket.services.retainer!.get({ bucket, key: 'small.md', etag: hex(v1) })) !== undefined, 'the version alice read to be kept');
    const v2 = (await put(casket.admin, 'small.md', 'line 1 by a person\n')).headers.etag as string;
    const r = await put(alice, 'small.md', 'line 1 by alice\n');
    expect([r.status, r.headers['x-casket-diff']], r.body).toEqual([428, `/_casket/diff?bucket=${bucket}&from=${hex(v1)}&key=small.md&to=${hex(v2)}`]);
  });

  it('a version larger than --retain-max-size: the same 428 links nothing', async () => {
    const large = `${'line of a large file\n'.repeat(10)}`;
    await put(casket.admin, 'large.md', large);
    await read('large.md');
    await put(casket.admin, 'large.md', `${large}one more line\n`);
    const r = await put(alice, 'large.md', `${large}by alice\n`);
    expect([r.status, xmlField(r.body, 'Code'), r.headers['x-casket-diff']], r.body).toEqual([428, 'PreconditionRequired', undefined]);
  });

  it("an agent's stale If-Match on a version larger than --retain-max-size: 412, linking nothing", async () => {
    const large = `${'another line of a large file\n'.repeat(10)}`;
    await put(casket.admin, 'stale.md', large);
    const v1 = await read('stale.md');
    await put(casket.admin, 'stale.md', `${large}one more line\n`);
    const r = await put(alice, 'stale.md', `${large}by alice\n`, { 'if-match': v1 });
    expect([r.status, xmlField(r.body, 'Code'), r.headers['x-casket-diff']], r.body).toEqual([412, 'PreconditionFailed', undefined]);
  });
});
