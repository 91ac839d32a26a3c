/**
 * MCP authorization (issue 40 item 5) with clients nobody here wrote: the
 * login a user does once in a browser, with that browser driven by Chromium
 * through playwright-core.
 *
 * - mcp-remote (the stdio bridge in front of a remote server) is spawned
 *   with nothing but the URL, as a user's mcpServers entry spawns it: it
 *   meets casket's 401, finds the authorization server (RFC 9728, RFC 8414),
 *   registers (RFC 7591) and prints "Please authorize this client by
 *   visiting: <url>" on stderr before it calls `open` — which on Linux runs
 *   xdg-open, and xdg-open runs $BROWSER: `true` here, so nothing opens and
 *   the test takes the URL from stderr. Chromium logs in on casket's page,
 *   allows on the consent screen, and lands on mcp-remote's own callback;
 *   mcp-remote redeems the code (PKCE) and the SDK's client lists, reads and
 *   edits through it.
 * - The MCP Inspector's CLI 1.0.3 has no OAuth client at all (build/transport.js
 *   creates its StreamableHTTPClientTransport with headers and no
 *   authProvider), so it cannot log in, TTY or not; it takes the access token
 *   mcp-remote got, with --header, as a script would.
 *
 * Then: the token acts as its agent whatever header the client adds; an
 * expired access token is a 401 the Inspector prints, and mcp-remote
 * refreshes it without a login; once the grant is revoked in the console
 * both clients meet a 401 that points to the protected resource metadata:
 * the Inspector prints casket's reason, mcp-remote asks the user to
 * authorize again.
 */
import { execFile } from 'node:child_process';
import { hkdfSync } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { decodeJwt, SignJWT } from 'jose';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { call, text, type ToolResult } from '../helpers/mcp.js';
import { haveChromium, launch } from '../console/browser.js';
import { consoleLogin } from '../console/login.js';
import { until } from '../helpers/poll.js';

const REPO = resolve(import.meta.dirname, '../..');
const MCP_REMOTE = join(REPO, 'node_modules/mcp-remote/dist/proxy.js');
const INSPECTOR = join(REPO, 'node_modules/.bin/mcp-inspector-cli');
const BUCKET = 'oauth';
const KEY = 'notes/todo.md';
const PATH = `${BUCKET}/${KEY}`;
const AUTHORIZE_PROMPT = /Please authorize this client by visiting:\s+(\S+)/g;

describe.skipIf(!haveChromium())('MCP authorization with mcp-remote and the Inspector CLI', { timeout: 60_000 }, () => {
  let casket: RunningCasket;
  let browser: Browser;
  let remote: Client;
  let transport: StdioClientTransport;
  let stderr = '';
  let configDir: string;
  /** The access token mcp-remote holds, read from where it keeps it. */
  let accessToken: string;
  /** The version mcp-remote's edit made. */
  let etag: string;

  const mcpUrl = () => `${casket.url}/_casket/mcp`;

  /** The n-th authorization URL mcp-remote printed (1-based). */
  const promptedUrl = (n: number) => [...stderr.matchAll(AUTHORIZE_PROMPT)][n - 1]?.[1];

  /** Waits for it; on a timeout, says what mcp-remote printed instead. */
  async function prompted(n: number): Promise<string> {
    await until(() => promptedUrl(n) !== undefined, `authorization URL ${n} on mcp-remote's stderr`, 20_000).catch((e: Error) => {
      throw new Error(`${e.message}; mcp-remote said:\n${stderr}`);
    });
    return promptedUrl(n)!;
  }

  /** What a person does in the browser: casket's login page, then Allow on the consent screen. */
  async function logInAndAllow(url: string, cred: Cred, agent: string): Promise<void> {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url);
    expect(await page.textContent('h1')).toBe('Connect MCP CLI Proxy to casket');
    await page.fill('#accessKeyId', cred.accessKeyId);
    await page.fill('#secretAccessKey', cred.secretAccessKey);
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    expect(await page.textContent('h1')).toBe('Allow MCP CLI Proxy to use casket?');
    expect(await page.textContent('main')).toContain(cred.accessKeyId);
    // A key bound to no agent (a person's) names the agent its client acts as.
    await page.fill('#agent', agent);
    await Promise.all([page.waitForURL(/\/oauth\/callback\?/), page.click('button[value=allow]')]);
    await context.close();
  }

  /** One Inspector CLI run with a bearer token (see third-party-clients.test.ts for why from test/). */
  async function inspector(token: string, method: string[], headers: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
    const args = ['--cli', mcpUrl(), '--header', `Authorization: Bearer ${token}`, ...headers.flatMap((h) => ['--header', h]), ...method];
    try {
      const { stdout, stderr: err } = await promisify(execFile)(INSPECTOR, args, { cwd: join(REPO, 'test'), timeout: 30_000 });
      return { code: 0, stdout, stderr: err };
    } catch (e) {
      const failed = e as { code?: number; stdout?: string; stderr?: string };
      return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
    }
  }

  /** Who wrote the current version, as the console's object view says. */
  async function writerOf(key: string): Promise<string | null> {
    const cookie = await consoleLogin(casket.url, casket.admin);
    const res = await fetch(`${casket.url}/_casket/console/api/object?${new URLSearchParams({ bucket: BUCKET, key })}`, { headers: { cookie } });
    return ((await res.json()) as { current: { writer: string | null } | null }).current?.writer ?? null;
  }

  beforeAll(async () => {
    casket = await startCasket({ keys: { person: {} } });
    const admin = sdk(casket.url, casket.admin);
    await admin.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await admin.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: '- read the issue\n- write the code\n' }));
    browser = await launch();
  }, 30_000);

  afterAll(async () => {
    await remote?.close().catch(() => {});
    await browser?.close();
    await casket?.stop();
  });

  /** mcp-remote as an mcpServers entry spawns it: the URL alone; what it stores goes to configDir. */
  function mcpRemote(onStderr: (s: string) => void): StdioClientTransport {
    const t = new StdioClientTransport({
      command: process.execPath,
      args: [MCP_REMOTE, mcpUrl()],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', MCP_REMOTE_CONFIG_DIR: configDir, BROWSER: 'true' },
      stderr: 'pipe',
    });
    t.stderr!.on('data', (chunk: Buffer) => onStderr(chunk.toString('utf8')));
    return t;
  }

  /** mcp-remote's stored tokens (…/<server hash>_tokens.json). */
  function tokensFile(): string {
    const name = readdirSync(configDir, { recursive: true, encoding: 'utf8' }).find((f) => f.endsWith('_tokens.json'));
    return join(configDir, name!);
  }

  it('mcp-remote, given only the URL, logs in through casket\'s pages, then lists, reads and edits as the agent allowed', async () => {
    configDir = mkdtempSync(join(tmpdir(), 'mcp-remote-oauth-'));
    transport = mcpRemote((s) => (stderr += s));
    remote = new Client({ name: 'oauth-test', version: '1.0.0' });
    const connected = remote.connect(transport);
    const url = await prompted(1);
    expect(new URL(url).pathname).toBe('/_casket/oauth/authorize');
    expect(new URL(url).searchParams.get('code_challenge_method')).toBe('S256');
    await logInAndAllow(url, casket.keys.person!, 'ann');
    await connected;

    const tools = await remote.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('edit_file');
    const read = await call(remote, 'read_text_file', { path: PATH });
    expect((read.structuredContent as { content: string }).content).toBe('- read the issue\n- write the code\n');
    const edited = await call(remote, 'edit_file', { path: PATH, edits: [{ oldText: 'write the code', newText: 'write the tests' }], expected_etag: read.structuredContent!.etag });
    expect(edited.isError, text(edited)).toBeFalsy();
    etag = String(edited.structuredContent!.etag);
    expect(await writerOf(KEY)).toBe('ann');

    accessToken = (JSON.parse(readFileSync(tokensFile(), 'utf8')) as { access_token: string }).access_token;
    expect(accessToken).toMatch(/^eyJ/);
    // No token in a URL: the one the client was sent to carried none, and neither do casket's log lines.
    expect(url).not.toContain(accessToken);
    expect(casket.logs.join('\n')).not.toContain(accessToken);
  });

  it('the Inspector CLI edits with that token, as ann whatever agent header it adds', async () => {
    // The token carries the agent the person consented to; a header (the S3 door's way to name one) changes nothing.
    const edits = JSON.stringify([{ oldText: 'read the issue', newText: 'read issue 40' }]);
    const edited = await inspector(accessToken, ['--method', 'tools/call', '--tool-name', 'edit_file', '--tool-arg', `path=${PATH}`, `edits=${edits}`, `expected_etag=${etag}`], ['x-agent-id: bob']);
    expect(edited.code, edited.stderr).toBe(0);
    const result = JSON.parse(edited.stdout) as ToolResult;
    expect(result.isError, text(result)).toBeFalsy();
    expect(await writerOf(KEY)).toBe('ann');
  });

  it('an expired access token: the Inspector prints casket\'s 401, a new mcp-remote refreshes it without a login', async () => {
    // The token as casket would have signed it ten minutes ago (access-token.ts: HS256, key derived from the key's secret).
    const person = casket.keys.person!;
    const key = new Uint8Array(hkdfSync('sha256', person.secretAccessKey, '', 'casket-oauth-access-token-v1', 32));
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ ...decodeJwt(accessToken), iat: now - 600, exp: now - 300 }).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: person.accessKeyId }).sign(key);
    const refused = await inspector(expired, ['--method', 'tools/list']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('"code":-32001,"message":"Unauthorized: The access token is not valid here');

    // A client started later with that token on disk: it refreshes (the refresh token rotates) and nobody logs in.
    const stored = JSON.parse(readFileSync(tokensFile(), 'utf8')) as { access_token: string; refresh_token: string };
    writeFileSync(tokensFile(), JSON.stringify({ ...stored, access_token: expired }));
    let said = '';
    const later = new Client({ name: 'oauth-test-later', version: '1.0.0' });
    await later.connect(mcpRemote((s) => (said += s)));
    try {
      expect((await later.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await later.close();
    }
    expect(said).not.toMatch(AUTHORIZE_PROMPT);
    const renewed = JSON.parse(readFileSync(tokensFile(), 'utf8')) as { access_token: string; refresh_token: string };
    expect(renewed.access_token).not.toBe(expired);
    expect(renewed.refresh_token).not.toBe(stored.refresh_token);
  });

  it('after Revoke in the console: 401 pointing to the resource metadata; the Inspector prints why, mcp-remote asks to authorize again', async () => {
    const cookie = await consoleLogin(casket.url, casket.admin);
    const listed = (await (await fetch(`${casket.url}/_casket/console/api/connected-clients`, { headers: { cookie } })).json()) as { clients: Array<{ id: string; clientName: string; agent: string }> };
    const grant = listed.clients.find((c) => c.clientName === 'MCP CLI Proxy');
    expect(grant?.agent).toBe('ann');
    const revoked = await fetch(`${casket.url}/_casket/console/api/connected-clients/${grant!.id}/revoke`, { method: 'POST', headers: { cookie, origin: casket.url } });
    expect(revoked.status).toBe(200);

    const raw = await fetch(mcpUrl(), {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toContain(`resource_metadata="${casket.url}/.well-known/oauth-protected-resource/_casket/mcp"`);

    const refused = await inspector(accessToken, ['--method', 'tools/list']);
    expect(refused.code).not.toBe(0);
    // What the Inspector prints is casket's JSON-RPC error body, as the SDK's transport reports a failed POST.
    expect(refused.stderr).toContain('Failed to connect to MCP server');
    expect(refused.stderr).toContain('"code":-32001,"message":"Unauthorized: The access token is not valid here');

    // mcp-remote meets the 401 at its next call; its refresh token went with the grant, so it starts a new login.
    void remote.listTools().catch(() => {});
    const again = await prompted(2);
    expect(new URL(again).pathname).toBe('/_casket/oauth/authorize');
  });
});
