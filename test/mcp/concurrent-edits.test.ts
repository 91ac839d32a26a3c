/**
 * "Two edits of one version: exactly one lands" (docs/design.md §8), judged by the
 * history checker of the linearizability suite (helpers/history.ts), not by
 * eye. Agents increment a counter line with read_text_file + edit_file over
 * MCP; agents that read the same value make byte-identical edits — the case
 * a store that lets identical content succeed gets wrong. Every
 * acknowledged edit (the version it named → the version it made) must form
 * one chain, and the final value must equal the acknowledged edits.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { checkChain, type AckedWrite } from '../helpers/history.js';
import { call, data, httpClient, mintToken, stdioClient, text } from '../helpers/mcp.js';

const bucket = 'race';
const AGENTS = Array.from({ length: 8 }, (_, i) => `e${i}`);
let casket: RunningCasket;
const clients: Client[] = [];

beforeAll(async () => {
  casket = await startCasket({ agents: AGENTS });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await casket?.stop();
});

const line = (n: number) => `title: shared counter\ncount: ${n}\nend\n`;

interface Editor {
  name: string;
  client: Client;
  /** Name the version read (expected_etag), or let casket use the agent's last full read. */
  explicit: boolean;
}

async function race(key: string, editors: Editor[], attemptsEach: number) {
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: line(0) }));
  const start = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  await bytes(start.Body);
  const acks: AckedWrite[] = [];
  let refused = 0;
  let identical = 0;
  const unexpected: string[] = [];
  await Promise.all(
    editors.map(async (e) => {
      for (let i = 0; i < attemptsEach; i++) {
        const read = await call(e.client, 'read_text_file', { path: `${bucket}/${key}` });
        const n = Number(/count: (\d+)/.exec(text(read))![1]);
        const from = String(data(read).etag);
        const edit = await call(e.client, 'edit_file', { path: `${bucket}/${key}`, edits: [{ oldText: `count: ${n}\n`, newText: `count: ${n + 1}\n` }], ...(e.explicit && { expected_etag: from }) });
        if (!edit.isError) acks.push({ writer: e.name, from, to: String(data(edit).etag), value: n + 1 });
        else if (data(edit).written === false && ['precondition-failed', 'stale-read'].includes(String(data(edit).error))) {
          refused++;
          if (data(edit).identical === true) identical++;
        } else unexpected.push(text(edit));
      }
    }),
  );
  const end = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const finalText = (await bytes(end.Body)).toString();
  const verdict = checkChain({ etag: start.ETag!, value: 0 }, acks, { etag: end.ETag!, value: Number(/count: (\d+)/.exec(finalText)![1]) });
  return { verdict, refused, identical, unexpected, acks: acks.length };
}

describe('concurrent edit_file over MCP: no lost update', () => {
  it('two identical edits of one version, sent together: exactly one lands, the other is refused as identical', async () => {
    const [a, b] = await Promise.all(AGENTS.slice(0, 2).map((name) => httpClient(casket, mintToken(casket.agents[name]!), name)));
    clients.push(a!, b!);
    const path = `${bucket}/same`;
    await call(a!, 'write_file', { path, content: line(7), create_only: true });
    const [ra, rb] = await Promise.all([call(a!, 'read_text_file', { path }), call(b!, 'read_text_file', { path })]);
    expect(data(ra).etag).toBe(data(rb).etag);
    const edit = { path, edits: [{ oldText: 'count: 7', newText: 'count: 8' }], expected_etag: data(ra).etag };
    const results = await Promise.all([call(a!, 'edit_file', edit), call(b!, 'edit_file', edit)]);
    expect(results.filter((r) => !r.isError)).toHaveLength(1);
    const loser = results.find((r) => r.isError)!;
    expect(data(loser)).toMatchObject({ written: false, identical: true });
    expect(text(loser)).toContain('byte-for-byte');
  });

  it('two agents over HTTP, each naming the version it read', async () => {
    const editors = await Promise.all(AGENTS.slice(0, 2).map(async (name) => ({ name, client: await httpClient(casket, mintToken(casket.agents[name]!), name), explicit: true })));
    clients.push(...editors.map((e) => e.client));
    const r = await race('two', editors, 30);
    console.log(`two agents: ${r.acks} edits landed, ${r.refused} refused (${r.identical} with identical bytes)`);
    // The checker judges first: a fork or a gap is a lost update, whatever else went wrong.
    expect(r.verdict.problems).toEqual([]);
    expect(r.verdict.ok).toBe(true);
    expect(r.unexpected).toEqual([]);
    expect(r.acks).toBeGreaterThan(0);
    expect(r.acks + r.refused).toBe(60);
  });

  it('eight agents over HTTP and stdio, half naming the version, half relying on their last full read', async () => {
    const editors = await Promise.all(
      AGENTS.map(async (name, i) => ({
        name,
        client: i % 4 === 3 ? await stdioClient(casket, casket.agents[name]!) : await httpClient(casket, mintToken(casket.agents[name]!), name),
        explicit: i % 2 === 0,
      })),
    );
    clients.push(...editors.map((e) => e.client));
    const r = await race('eight', editors, 15);
    console.log(`eight agents: ${r.acks} edits landed, ${r.refused} refused (${r.identical} with identical bytes)`);
    // The checker judges first: a fork or a gap is a lost update, whatever else went wrong.
    expect(r.verdict.problems).toEqual([]);
    expect(r.verdict.ok).toBe(true);
    expect(r.unexpected).toEqual([]);
    // Agents that read the same value made byte-identical edits, and the losers were refused all the same.
    expect(r.identical).toBeGreaterThan(0);
    expect(r.acks + r.refused).toBe(120);
    // 120 edits through eight clients, two of them stdio processes: 49 s at a load average of 25 (three mutation runs beside it), so vitest's 60 s is raised.
  }, 180_000);
});
