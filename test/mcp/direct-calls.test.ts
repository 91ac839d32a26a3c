/**
 * A lone tools/call is answered straight from the tool (src/mcp/tool-calls.ts);
 * the same call inside a batch goes through the SDK's server. An agent must
 * not be able to tell them apart: the same answer in both views, refusals and
 * bad arguments included, and the same reminders.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { mcpEndpoint, mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';

const bucket = 'direct';
let casket: McpCasket;
let bob: string;
let alice: string;
let id = 0;

interface Answer {
  id: number;
  result?: { content?: unknown[]; structuredContent?: Record<string, unknown>; isError?: boolean };
  error?: { code: number; message: string };
}

async function post(token: string, body: unknown): Promise<Answer[]> {
  const res = await fetch(mcpEndpoint(casket), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  const answer = (await res.json()) as Answer | Answer[];
  return Array.isArray(answer) ? answer : [answer];
}

const callOf = (name: string, args: unknown) => ({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } });

/** The call's answer alone (direct) and inside a batch with a ping (the SDK's server), ids removed. */
async function bothWays(token: string, name: string, args: unknown): Promise<[Omit<Answer, 'id'>, Omit<Answer, 'id'>]> {
  const [alone] = await post(token, callOf(name, args));
  const call = callOf(name, args);
  const batch = await post(token, [call, { jsonrpc: '2.0', id: ++id, method: 'ping' }]);
  const inBatch = batch.find((a) => a.id === call.id)!;
  const { id: _a, ...a } = alone!;
  const { id: _b, ...b } = inBatch;
  return [a, b];
}

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['alice', 'bob'] });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  const s3 = sdk(casket.url, casket.agents.alice!);
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'plan.md', Body: '# plan\n- one\n- two\n', IfNoneMatch: '*' }));
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes.txt', Body: 'notes\n', IfNoneMatch: '*' }));
  alice = mintToken(casket.agents.alice!, { agent: 'alice' });
  bob = mintToken(casket.agents.bob!, { agent: 'bob' });
}, 60_000);

afterAll(async () => {
  await casket?.stop();
});

describe('a lone tools/call and the same call in a batch answer alike', () => {
  it.each([
    ['read_text_file', { path: `${bucket}/plan.md` }],
    ['read_text_file', { path: `${bucket}/plan.md`, head: 1 }],
    ['get_file_info', { path: `${bucket}/notes.txt` }],
    ['list_directory', { path: bucket }],
    ['search_files', { path: bucket, pattern: '*.md' }],
    // A tool whose arguments are all optional: the ones given must be the ones it runs with.
    ['what_changed', { since: 'not-a-cursor' }],
    // A refusal: a stale etag (nothing is written either way, so both see the same file).
    ['write_file', { path: `${bucket}/plan.md`, content: 'x', expected_etag: '"0000"' }],
    // Arguments the tool's schema refuses: the SDK words the refusal on both ways.
    ['read_text_file', { path: 7 }],
    ['read_text_file', { path: `${bucket}/plan.md`, head: -1 }],
    ['no_such_tool', {}],
  ])('%s %j', async (name, args) => {
    const [alone, inBatch] = await bothWays(bob, name, args);
    expect(alone).toEqual(inBatch);
    expect(alone.result ?? alone.error).toBeDefined();
  });
});

it('a lone call carries the reminder of a change since the agent read, in both views, once', async () => {
  await post(bob, callOf('read_text_file', { path: `${bucket}/notes.txt` }));
  const [read] = await post(alice, callOf('read_text_file', { path: `${bucket}/notes.txt` }));
  const etag = read!.result!.structuredContent!.etag as string;
  const [edit] = await post(alice, callOf('edit_file', { path: `${bucket}/notes.txt`, edits: [{ oldText: 'notes', newText: 'notes, by alice' }], expected_etag: etag }));
  expect(edit!.result!.isError).toBeFalsy();

  const [next] = await post(bob, callOf('list_directory', { path: bucket }));
  const changed = next!.result!.structuredContent!.changed_since_read as { path: string }[];
  expect(changed.map((c) => c.path)).toEqual([`${bucket}/notes.txt`]);
  expect(JSON.stringify(next!.result!.content)).toContain('notes, by alice');
  const [after] = await post(bob, callOf('list_directory', { path: bucket }));
  expect(after!.result!.structuredContent!.changed_since_read).toBeUndefined();
});
