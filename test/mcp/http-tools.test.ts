/**
 * casket's file tools over Streamable HTTP (docs/design.md §8), with the SDK's own
 * Client against a real casket: the tools answer ETags, every write is
 * compare-and-swap, refusals say what changed and the next call, and an
 * agent reading over MCP and writing over S3 is one agent.
 */
import { createHash } from 'node:crypto';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, httpClient, mcpEndpoint, mintToken, startMcpCasket, text, type McpCasket } from '../helpers/mcp.js';

let casket: McpCasket;
let alice: Client;
let bob: Client;
const bucket = 'mcp';

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['alice', 'bob'], keys: { readonly: { agent: 'carol', policy: { Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:ListBucket'], Resource: ['arn:aws:s3:::mcp', 'arn:aws:s3:::mcp/*'] }] } } } });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
  alice = await httpClient(casket, mintToken(casket.agents.alice!), 'alice');
  bob = await httpClient(casket, mintToken(casket.agents.bob!), 'bob');
});
afterAll(async () => {
  await alice?.close();
  await bob?.close();
  await casket?.stop();
});

const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');
const quoted = (content: string) => `"${sha256Hex(content)}"`;

describe('MCP over Streamable HTTP', () => {
  it('lists the tools with truthful annotations', async () => {
    const { tools } = await alice.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    const readers = ['read_text_file', 'read_media_file', 'get_file_info', 'list_directory', 'search_files', 'what_changed'];
    const writers = ['write_file', 'write_files', 'edit_file', 'apply_patch', 'move_file', 'delete_file'];
    expect([...byName.keys()].sort()).toEqual([...readers, ...writers].sort());
    for (const name of readers) expect(byName.get(name)!.annotations, name).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    // Conditional writes replace content and a repeat is refused (the version moved on): destructive, not idempotent.
    for (const name of writers) expect(byName.get(name)!.annotations, name).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false });
  });

  it('creates, reads with the SHA-256 ETag, edits with the ETag it read, and answers a diff', async () => {
    const created = await call(alice, 'write_file', { path: `${bucket}/notes.md`, content: 'one\ntwo\nthree\n', create_only: true });
    expect(created.isError, text(created)).toBeFalsy();
    expect(data(created).etag).toBe(quoted('one\ntwo\nthree\n'));
    const read = await call(alice, 'read_text_file', { path: `s3://${bucket}/notes.md` });
    expect(read.content[0]).toMatchObject({ type: 'text', text: 'one\ntwo\nthree\n' });
    expect(data(read)).toMatchObject({ etag: quoted('one\ntwo\nthree\n'), read: 'full', lines: { from: 1, to: 3, total: 3 } });
    const edited = await call(alice, 'edit_file', { path: `${bucket}/notes.md`, edits: [{ oldText: 'two', newText: 'TWO' }], expected_etag: data(read).etag });
    expect(edited.isError, text(edited)).toBeFalsy();
    expect(data(edited).etag).toBe(quoted('one\nTWO\nthree\n'));
    expect(String(data(edited).diff)).toContain('-two\n+TWO');
    const s3 = await sdk(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: bucket, Key: 'notes.md' }));
    expect((await bytes(s3.Body)).toString()).toBe('one\nTWO\nthree\n');
    expect(s3.ETag).toBe(data(edited).etag);
  });

  it('get_file_info reports the read stamp: none, partial, full, stale', async () => {
    const path = `${bucket}/info.txt`;
    await call(alice, 'write_file', { path, content: 'a\nb\nc\n', create_only: true });
    expect(data(await call(bob, 'get_file_info', { path }))).toMatchObject({ your_read: 'none', size: 6, last_writer: 'alice', etag: quoted('a\nb\nc\n') });
    await call(bob, 'read_text_file', { path, head: 1 });
    expect(data(await call(bob, 'get_file_info', { path })).your_read).toBe('partial');
    await call(bob, 'read_text_file', { path });
    expect(data(await call(bob, 'get_file_info', { path })).your_read).toBe('full');
    await call(alice, 'edit_file', { path, edits: [{ oldText: 'b', newText: 'B' }] });
    expect(data(await call(bob, 'get_file_info', { path })).your_read).toBe('stale');
  });

  it('a partial read does not entitle an edit; a whole read then does', async () => {
    const path = `${bucket}/partial.txt`;
    await call(alice, 'write_file', { path, content: 'l1\nl2\nl3\nl4\n', create_only: true });
    const head = await call(bob, 'read_text_file', { path, head: 2 });
    expect(head.content[0]).toMatchObject({ text: 'l1\nl2\n' });
    expect(data(head).read).toBe('partial');
    const refused = await call(bob, 'edit_file', { path, edits: [{ oldText: 'l1', newText: 'L1' }], expected_etag: data(head).etag });
    expect(refused.isError).toBe(true);
    expect(data(refused)).toMatchObject({ error: 'partial-read', written: false });
    expect(text(refused)).toContain('read_text_file');
    const whole = await call(bob, 'read_text_file', { path });
    const ok = await call(bob, 'edit_file', { path, edits: [{ oldText: 'l1', newText: 'L1' }], expected_etag: data(whole).etag });
    expect(ok.isError, text(ok)).toBeFalsy();
  });

  it('an S3 PutObject between an MCP read and an MCP edit refuses the edit, with the diff and the next call', async () => {
    const path = `${bucket}/shared.txt`;
    await call(alice, 'write_file', { path, content: 'alpha\nbeta\ngamma\n', create_only: true });
    const read = await call(bob, 'read_text_file', { path });
    // alice writes over S3 with her own key: the agent who read over MCP is the same agent on S3.
    const s3 = sdk(casket.url, casket.agents.alice!);
    await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'shared.txt' })).then((r) => bytes(r.Body));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'shared.txt', Body: 'alpha\nBETA\ngamma\n', IfMatch: String(data(read).etag) }));
    const refused = await call(bob, 'edit_file', { path, edits: [{ oldText: 'gamma', newText: 'GAMMA' }], expected_etag: data(read).etag });
    expect(refused.isError).toBe(true);
    const d = data(refused);
    expect(d).toMatchObject({ current_etag: quoted('alpha\nBETA\ngamma\n'), last_writer: 'alice', identical: false, written: false });
    expect(String(d.diff)).toContain('-beta\n+BETA');
    expect(text(refused)).toContain(`"expected_etag": "\\"${sha256Hex('alpha\nBETA\ngamma\n')}\\""`);
    const after = await sdk(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: bucket, Key: 'shared.txt' }));
    expect((await bytes(after.Body)).toString()).toBe('alpha\nBETA\ngamma\n');
  });

  it('an agent that read over S3 may write over MCP: one agent, one set of stamps', async () => {
    await sdk(casket.url, casket.admin).send(new PutObjectCommand({ Bucket: bucket, Key: 'cross.txt', Body: 'x\n' }));
    const read = await sdk(casket.url, casket.agents.bob!).send(new GetObjectCommand({ Bucket: bucket, Key: 'cross.txt' }));
    await bytes(read.Body);
    const edited = await call(bob, 'edit_file', { path: `${bucket}/cross.txt`, edits: [{ oldText: 'x', newText: 'y' }] });
    expect(edited.isError, text(edited)).toBeFalsy();
    // alice never read it: the same edit from her is refused as not-read.
    const refused = await call(alice, 'edit_file', { path: `${bucket}/cross.txt`, edits: [{ oldText: 'y', newText: 'z' }] });
    expect(data(refused)).toMatchObject({ error: 'not-read', written: false });
  });

  it('merge: true lands a non-overlapping edit of an older version', async () => {
    const path = `${bucket}/merge.txt`;
    await call(alice, 'write_file', { path, content: 'top\nmiddle\nbottom\n', create_only: true });
    const read = await call(bob, 'read_text_file', { path });
    await call(alice, 'edit_file', { path, edits: [{ oldText: 'top', newText: 'TOP' }] });
    const merged = await call(bob, 'edit_file', { path, edits: [{ oldText: 'bottom', newText: 'BOTTOM' }], expected_etag: data(read).etag, merge: true });
    expect(merged.isError, text(merged)).toBeFalsy();
    expect(data(merged).merged).toBe(true);
    const now = await call(bob, 'read_text_file', { path });
    expect(now.content[0]).toMatchObject({ text: 'TOP\nmiddle\nBOTTOM\n' });
  });

  it('write_file without expected_etag is conditioned on the last full read; an existing file never read is the 428 of S3', async () => {
    const path = `${bucket}/derived.txt`;
    await call(alice, 'write_file', { path, content: 'first\n', create_only: true });
    const blind = await call(bob, 'write_file', { path, content: 'blind\n' });
    expect(data(blind)).toMatchObject({ error: 'precondition-required', written: false, current_etag: quoted('first\n') });
    await call(bob, 'read_text_file', { path });
    const after = await call(bob, 'write_file', { path, content: 'second\n' });
    expect(after.isError, text(after)).toBeFalsy();
    // alice's last full read (her own write) is now stale: the same call from her is refused.
    const stale = await call(alice, 'write_file', { path, content: 'third\n' });
    expect(data(stale)).toMatchObject({ written: false, last_writer: 'bob' });
    // A file nobody has: created, as create-only.
    expect((await call(bob, 'write_file', { path: `${bucket}/derived-new.txt`, content: 'new\n' })).isError).toBeFalsy();
  });

  it('dryRun shows the diff and writes nothing', async () => {
    const path = `${bucket}/dry.txt`;
    const made = await call(alice, 'write_file', { path, content: 'keep\n', create_only: true });
    const dry = await call(alice, 'edit_file', { path, edits: [{ oldText: 'keep', newText: 'drop' }], dryRun: true });
    expect(String(data(dry).diff)).toContain('+drop');
    expect(data(dry).written).toBe(false);
    expect(data(await call(alice, 'get_file_info', { path })).etag).toBe(data(made).etag);
  });

  it('list_directory lists files with their etags and directories', async () => {
    await call(alice, 'write_file', { path: `${bucket}/dir/a.txt`, content: 'a', create_only: true });
    await call(alice, 'write_file', { path: `${bucket}/dir/sub/007`, content: 'b', create_only: true });
    const listed = await call(bob, 'list_directory', { path: `${bucket}/dir` });
    expect(text(listed)).toContain('[DIR] sub/');
    expect(text(listed)).toContain(`[FILE] a.txt (1 bytes, etag ${quoted('a')})`);
    const sub = await call(bob, 'list_directory', { path: `${bucket}/dir/sub/` });
    expect(data(sub).files).toEqual([expect.objectContaining({ name: '007' })]);
  });
});

describe('MCP refusals: a clear tool error, nothing written', () => {
  it('unknown bucket, unknown key, malformed etag, oversize content, oldText missing or ambiguous, a denied bucket', async () => {
    const path = `${bucket}/bad.txt`;
    const made = await call(alice, 'write_file', { path, content: 'same\nsame\nother\n', create_only: true });
    const etag = data(made).etag;
    const cases: Array<[string, Record<string, unknown>, Client | Promise<Client>, RegExp]> = [
      ['read_text_file', { path: 'no-such-bucket/x' }, alice, /no bucket "no-such-bucket"/],
      ['edit_file', { path: `${bucket}/absent.txt`, edits: [{ oldText: 'a', newText: 'b' }] }, alice, /does not exist/],
      ['write_file', { path, content: 'x', expected_etag: 'abc' }, alice, /not a casket ETag/],
      ['write_file', { path, content: 'x'.repeat(4 * 1024 * 1024 + 1), expected_etag: etag }, alice, /more than the 4194304 bytes/],
      ['edit_file', { path, edits: [{ oldText: 'missing', newText: 'x' }], expected_etag: etag }, alice, /was not found/],
      ['edit_file', { path, edits: [{ oldText: 'same', newText: 'x' }], expected_etag: etag }, alice, /occurs 2 times/],
      ['write_file', { path: `${bucket}/denied.txt`, content: 'x', create_only: true }, carol(), /may not/],
    ];
    for (const [tool, args, client, message] of cases) {
      const r = await call(await client, tool, args);
      expect(r.isError, `${tool} ${JSON.stringify(args).slice(0, 80)}`).toBe(true);
      expect(text(r)).toMatch(message);
      expect(text(r)).toContain('Nothing was written');
    }
    expect(data(await call(alice, 'get_file_info', { path })).etag).toBe(etag);
    const denied = await call(alice, 'get_file_info', { path: `${bucket}/denied.txt` });
    expect(denied.isError).toBe(true);
  });

  it('a tool call without credentials is 401; a token of agent A cannot act as B', async () => {
    // No credentials: initialize itself is 401 (where an OAuth client starts its login, test/oauth/).
    await expect(httpClient(casket, undefined, 'anonymous')).rejects.toThrow(/401|Unauthorized/);
    // alice's key minting a token that claims bob: refused at the door.
    const forged = mintToken(casket.agents.alice!, { agent: 'bob' });
    const res = await fetch(mcpEndpoint(casket), { method: 'POST', headers: { authorization: `Bearer ${forged}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_text_file', arguments: { path: `${bucket}/notes.md` } } }) });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('bound to agent "alice"');
    // A token signed with another secret.
    const wrong = mintToken({ accessKeyId: casket.agents.alice!.accessKeyId, secretAccessKey: 'not-the-secret' });
    const res2 = await fetch(mcpEndpoint(casket), { method: 'POST', headers: { authorization: `Bearer ${wrong}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect(res2.status).toBe(401);
    // No token or secret in any log line.
    expect(casket.logs.join('\n')).not.toContain(forged.split('.')[2]);
    expect(casket.logs.join('\n')).not.toContain(casket.agents.alice!.secretAccessKey);
  });

  it('an Origin that is not loopback nor allowed is refused (DNS-rebinding protection)', async () => {
    const res = await fetch(mcpEndpoint(casket), { method: 'POST', headers: { origin: 'http://evil.example.com', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect(res.status).toBe(403);
  });
});

let carolClient: Promise<Client> | undefined;
function carol(): Promise<Client> {
  carolClient ??= httpClient(casket, mintToken(casket.keys.readonly!), 'carol');
  return carolClient;
}
afterAll(async () => {
  await (await carolClient)?.close();
});
