/**
 * write_file's condition is casket's, whoever writes and under every policy
 * (docs/design.md §3, §4, §8): an expected_etag is sent as If-Match, so a
 * stale one is refused for a person's key too, and under --agent-writes
 * read-stamp (where a write without a condition is let through on the agent's
 * read stamp) it is not traded for the stamp. Without expected_etag, a person
 * writes as a plain S3 PUT does; an agent's write is conditioned on its last
 * whole read. Issue 43's audit dropped the If-Match and only the agents'
 * "must write conditionally" rule noticed.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, httpClient, mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';

let casket: McpCasket;
let admin: S3Client;
let alice: Client;
let person: Client;
const bucket = 'conditions';

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['alice'], keys: { person: {} }, flags: { agentWrites: 'read-stamp' } });
  admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  alice = await httpClient(casket, mintToken(casket.agents.alice!), 'alice');
  person = await httpClient(casket, mintToken(casket.keys.person!), 'person');
});
afterAll(async () => {
  await alice?.close();
  await person?.close();
  admin?.destroy();
  await casket?.stop();
});

const put = (key: string, body: string) => admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
const now = async (key: string) => (await bytes((await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();
const etagOf = async (client: Client, key: string) => data(await call(client, 'read_text_file', { path: `${bucket}/${key}` })).etag as string;

describe('write_file conditions beyond agents under require', () => {
  it("a person's stale expected_etag is refused and the newer version stays; without one, a plain overwrite", async () => {
    await put('people.md', 'v1\n');
    const v1 = await etagOf(person, 'people.md');
    await put('people.md', 'v2 by someone else\n');
    const stale = await call(person, 'write_file', { path: `${bucket}/people.md`, content: 'mine\n', expected_etag: v1 });
    expect(stale.isError).toBe(true);
    expect(await now('people.md')).toBe('v2 by someone else\n');
    // The contract for people (§4): no condition asked, none made — as S3.
    const plain = await call(person, 'write_file', { path: `${bucket}/people.md`, content: 'mine\n' });
    expect(plain.isError).toBeFalsy();
    expect(await now('people.md')).toBe('mine\n');
  });

  it('under read-stamp an agent\'s stale expected_etag is refused even though its read stamp is current', async () => {
    await put('agent.md', 'v1\n');
    const v1 = await etagOf(alice, 'agent.md');
    await put('agent.md', 'v2 by someone else\n');
    // alice reads v2 in full: the stamp alone would let an unconditional write through.
    await etagOf(alice, 'agent.md');
    const stale = await call(alice, 'write_file', { path: `${bucket}/agent.md`, content: 'alice\n', expected_etag: v1 });
    expect(stale.isError).toBe(true);
    expect(await now('agent.md')).toBe('v2 by someone else\n');
  });

  it('under read-stamp an agent\'s write without expected_etag stands on its last whole read: stale is refused, current goes through', async () => {
    await put('stamp.md', 'v1\n');
    await etagOf(alice, 'stamp.md');
    await put('stamp.md', 'v2 by someone else\n');
    const stale = await call(alice, 'write_file', { path: `${bucket}/stamp.md`, content: 'alice\n' });
    expect(stale.isError).toBe(true);
    expect(data(stale).error).toBe('stale-read');
    expect(await now('stamp.md')).toBe('v2 by someone else\n');
    await etagOf(alice, 'stamp.md');
    const fresh = await call(alice, 'write_file', { path: `${bucket}/stamp.md`, content: 'alice\n' });
    expect(fresh.isError).toBeFalsy();
    expect(await now('stamp.md')).toBe('alice\n');
  });
});
