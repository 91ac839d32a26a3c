/**
 * An MCP client logs in to casket the way Claude Code, VS Code and the MCP
 * Inspector do (MCP authorization, 2025-11-25): the MCP SDK's own client
 * auth (an OAuthClientProvider) meets the 401 at initialize, follows
 * resource_metadata to casket's authorization server, registers, opens the
 * authorize URL — here in Chromium, where a person logs in with an access
 * key and consents — redeems the code with PKCE, and then lists, reads and
 * edits a file with the token, as the agent the key is bound to.
 */
import { GetObjectCommand, CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';
import { call, data, mcpEndpoint, text } from '../helpers/mcp.js';
import { haveChromium, launch } from '../console/browser.js';
import { callbackServer } from './flow.js';

const bucket = 'oauth-flow';
let casket: RunningCasket;
let browser: Browser;
/** Chromium does the person's part; without it (a user's machine) the flow is skipped, in CI it throws (need()). */
const withChromium = haveChromium();
let callback: Awaited<ReturnType<typeof callbackServer>>;

beforeAll(async () => {
  casket = await startCasket({ agents: ['alice'] });
  const s3 = sdk(casket.url, casket.admin);
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes.md', Body: 'draft one\n' }));
  callback = await callbackServer();
  if (withChromium) browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await callback?.close();
  await casket?.stop();
});

/** What a desktop MCP client keeps: its registration, tokens and PKCE verifier; the authorize URL it would open. */
class Provider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  opened?: URL;
  constructor(readonly redirectUrl: string) {}
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Flow test client', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.info; }
  saveClientInformation(info: OAuthClientInformationMixed) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(tokens: OAuthTokens) { this.saved = tokens; }
  redirectToAuthorization(url: URL) { this.opened = url; }
  saveCodeVerifier(v: string) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

describe.runIf(withChromium)('an MCP client connects with a login, not a pasted secret', () => {
  it('the MCP SDK client logs in through Chromium, consents as agent alice, then lists, reads and edits', async () => {
    const provider = new Provider(callback.url);
    const first = new StreamableHTTPClientTransport(mcpEndpoint(casket), { authProvider: provider });
    // initialize meets the 401; the SDK discovers the AS, registers and "opens" the authorize URL.
    await expect(new Client({ name: 'flow', version: '1' }).connect(first)).rejects.toThrow(UnauthorizedError);
    expect(provider.opened?.pathname).toBe('/_casket/oauth/authorize');
    expect(provider.opened?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(provider.opened?.searchParams.get('resource')).toBe(mcpEndpoint(casket).toString());

    const page = await browser.newPage();
    try {
      await page.goto(provider.opened!.toString());
      await page.fill('#accessKeyId', casket.agents.alice!.accessKeyId);
      await page.fill('#secretAccessKey', casket.agents.alice!.secretAccessKey);
      await page.click('button[type=submit]');
      // The consent names the client and the agent; the key's policy (none: full rights) is shown.
      await page.waitForSelector('text=Allow Flow test client to use casket?');
      expect(await page.textContent('main')).toContain('agent alice');
      const back = callback.next();
      await page.click('button[value=allow]');
      const q = await back;
      expect(q.get('state')).toBe(provider.opened!.searchParams.get('state'));
      expect(q.get('iss')).toBe(new URL(casket.url).origin);
      await first.finishAuth(q.get('code')!);
    } finally {
      await page.close();
    }
    expect(provider.saved?.refresh_token).toBeTruthy();

    const client = new Client({ name: 'flow', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(mcpEndpoint(casket), { authProvider: provider }));
    const listed = await call(client, 'list_directory', { path: `${bucket}/` });
    expect(text(listed)).toContain('notes.md');
    expect(text(await call(client, 'read_text_file', { path: `${bucket}/notes.md` }))).toContain('draft one');
    const edited = await call(client, 'edit_file', { path: `${bucket}/notes.md`, edits: [{ oldText: 'draft one', newText: 'draft two' }] });
    expect(edited.isError, text(edited)).toBeFalsy();
    const got = await sdk(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: bucket, Key: 'notes.md' }));
    expect((await bytes(got.Body)).toString()).toBe('draft two\n');
    // The write is alice's: the token carries her agent.
    expect(data(await call(client, 'get_file_info', { path: `${bucket}/notes.md` })).last_writer).toBe('alice');
    await client.close();
  });
});
