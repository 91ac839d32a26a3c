/**
 * The MCP authorization spec's security requirements, each tried the way an
 * attacker would (https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#security-considerations;
 * OAuth 2.1 §7; RFC 9700): PKCE required and S256 only, redirect URIs
 * matched exactly, codes and refresh tokens used once (a second use revokes
 * the grant), tokens bound to this MCP endpoint, the agent a token carries
 * fixed, the consent POST checked, expired and revoked tokens answered 401
 * with the metadata pointer, and no token or code in a log line.
 */
import { hkdfSync } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, startCasket, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { until } from '../helpers/poll.js';
import { mintAccessToken } from '../../src/oauth/access-token.js';
import { authorizeUrl, consent, login, mcpPost, pkce, register, token, tokensFor } from './flow.js';

const bucket = 'oauth-attacks';
let casket: RunningCasket;
/** Every secret the tests saw: none may appear in casket's log. */
const secrets: string[] = [];

beforeAll(async () => {
  casket = await startCasket({ agents: ['alice', 'bob'], keys: { person: {}, rotated: {}, removed: {}, braked: {} } });
  const s3 = sdk(casket.url, casket.admin);
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: 'a\n' }));
});
afterAll(async () => {
  await casket?.stop();
});

const resource = () => new URL('/_casket/mcp', casket.url).toString();
const metadataPointer = () => `resource_metadata="${new URL('/.well-known/oauth-protected-resource/_casket/mcp', casket.url)}"`;
const readA = { method: 'tools/call', params: { name: 'read_text_file', arguments: { path: `${bucket}/a.txt` } } };
const kept = <T extends { access: string; refresh: string }>(t: T): T => (secrets.push(t.access, t.refresh), t);

/** A code for `client`, consented by alice's key. */
async function codeFor(client: Awaited<ReturnType<typeof register>>, challenge: string): Promise<string> {
  const { tx } = await login(casket, authorizeUrl(casket, client, { code_challenge: challenge }), casket.agents.alice!);
  const { location } = await consent(casket, { tx: tx! });
  const code = location!.searchParams.get('code')!;
  secrets.push(code, tx!);
  return code;
}

describe('casket as authorization server: the attacks the MCP spec names', () => {
  it('publishes its metadata without credentials, and every anonymous MCP request is 401 with the pointer to it', async () => {
    const prm = (await (await fetch(new URL('/.well-known/oauth-protected-resource/_casket/mcp', casket.url))).json()) as { resource: string; authorization_servers: string[] };
    expect(prm.resource).toBe(resource());
    const as = (await (await fetch(new URL('/.well-known/oauth-authorization-server', prm.authorization_servers[0]))).json()) as { code_challenge_methods_supported: string[]; issuer: string };
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    expect(as.issuer).toBe(new URL(casket.url).origin);
    const anonymous = await mcpPost(casket, undefined, { method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.wwwAuthenticate).toBe(`Bearer ${metadataPointer()}`);
  });

  it('refuses oversized or unsized bodies at registration and the token endpoint before reading them, and stays up', async () => {
    const post = (path: string, body: string, type: string, chunked = false) =>
      fetch(new URL(path, casket.url), { method: 'POST', headers: { 'content-type': type }, body: chunked ? new Blob([body]).stream() : body, ...(chunked && { duplex: 'half' }) } as RequestInit);
    const big = 'x'.repeat(70 * 1024);
    const register = await post('/_casket/oauth/register', JSON.stringify({ client_name: big, redirect_uris: ['http://127.0.0.1:1/cb'] }), 'application/json');
    expect(register.status).toBe(400);
    expect(((await register.json()) as { error: string }).error).toBe('invalid_client_metadata');
    const token = await post('/_casket/oauth/token', `grant_type=authorization_code&code=${big}`, 'application/x-www-form-urlencoded');
    expect(token.status).toBe(400);
    const unsized = await post('/_casket/oauth/token', 'grant_type=refresh_token&refresh_token=x', 'application/x-www-form-urlencoded', true);
    expect(unsized.status).toBe(400);
    const prm = await fetch(new URL('/.well-known/oauth-protected-resource', casket.url));
    expect(prm.status).toBe(200);
  });

  it('refuses an authorization request without PKCE, or with plain PKCE', async () => {
    const client = await register(casket);
    for (const params of [{ code_challenge: undefined }, { code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }, { code_challenge: pkce().challenge, code_challenge_method: undefined }]) {
      const res = await fetch(authorizeUrl(casket, client, params), { redirect: 'manual' });
      expect(res.status).toBe(303);
      const to = new URL(res.headers.get('location')!);
      expect(to.searchParams.get('error')).toBe('invalid_request');
      expect(to.searchParams.get('code')).toBeNull();
    }
  });

  it('refuses a wrong code_verifier, and a redirect_uri not matched exactly (at authorize: no redirect at all)', async () => {
    const client = await register(casket);
    for (const redirect of [`${client.redirect_uris[0]}/`, `${client.redirect_uris[0]}?x=1`, client.redirect_uris[0]!.replace('127.0.0.1', 'localhost'), 'https://evil.example/callback']) {
      const res = await fetch(authorizeUrl(casket, client, { code_challenge: pkce().challenge, redirect_uri: redirect }), { redirect: 'manual' });
      expect(res.status, redirect).toBe(400);
      expect(res.headers.get('location')).toBeNull();
    }
    const { verifier, challenge } = pkce();
    const code = await codeFor(client, challenge);
    const base = { grant_type: 'authorization_code', code, client_id: client.client_id, redirect_uri: client.redirect_uris[0]!, resource: resource() };
    const wrong = await token(casket, { ...base, code_verifier: pkce().verifier });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
    const redirect = await token(casket, { ...base, code_verifier: verifier, redirect_uri: `${client.redirect_uris[0]}/` });
    expect(redirect.body.error).toBe('invalid_grant');
    const none = await token(casket, { ...base, code_verifier: '' });
    expect(none.body.error).toBe('invalid_grant');
    // The right verifier, exactly the same redirect_uri: a token.
    expect((await token(casket, { ...base, code_verifier: verifier })).body.access_token).toBeTruthy();
  });

  it('a code used twice revokes the grant: the token it gave stops working', async () => {
    const client = await register(casket);
    const { verifier, challenge } = pkce();
    const code = await codeFor(client, challenge);
    const fields = { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: client.redirect_uris[0]! };
    const first = await token(casket, fields);
    secrets.push(first.body.access_token!, first.body.refresh_token!);
    expect((await mcpPost(casket, first.body.access_token, readA)).status).toBe(200);
    const again = await token(casket, fields);
    expect(again.body.error).toBe('invalid_grant');
    const after = await mcpPost(casket, first.body.access_token, readA);
    expect(after.status).toBe(401);
    expect(after.wwwAuthenticate).toContain(metadataPointer());
    expect((await token(casket, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token!, client_id: client.client_id })).body.error).toBe('invalid_grant');
  });

  it('refresh tokens rotate; a refresh token used twice revokes the grant', async () => {
    const t = kept(await tokensFor(casket, casket.agents.alice!));
    const refresh = (rt: string) => token(casket, { grant_type: 'refresh_token', refresh_token: rt, client_id: t.client.client_id });
    const next = await refresh(t.refresh);
    expect(next.body.refresh_token).toBeTruthy();
    expect(next.body.refresh_token).not.toBe(t.refresh);
    secrets.push(next.body.access_token!, next.body.refresh_token!);
    expect((await mcpPost(casket, next.body.access_token, readA)).status).toBe(200);
    // The old one again: someone holds a copy. The whole grant ends, the newest tokens with it.
    expect((await refresh(t.refresh)).body.error).toBe('invalid_grant');
    expect((await refresh(next.body.refresh_token!)).body.error).toBe('invalid_grant');
    expect((await mcpPost(casket, next.body.access_token, readA)).status).toBe(401);
  });

  it('binds tokens to this MCP endpoint: another resource is refused at authorize, at the token endpoint and at use', async () => {
    const client = await register(casket);
    const other = 'https://other.example/_casket/mcp';
    const res = await fetch(authorizeUrl(casket, client, { code_challenge: pkce().challenge, resource: other }), { redirect: 'manual' });
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_target');
    const t = kept(await tokensFor(casket, casket.agents.alice!));
    expect((await token(casket, { grant_type: 'refresh_token', refresh_token: t.refresh, client_id: t.client.client_id, resource: other })).body.error).toBe('invalid_target');
    // Signed with the right key, for a live grant, but for another audience.
    const claims = decodeJwt(t.access) as { sub: string; agent: string; client_id: string; gid: string };
    const forOther = await mintAccessToken(casket.agents.alice!.secretAccessKey, { accessKeyId: claims.sub, agent: claims.agent, clientId: claims.client_id, grantId: claims.gid }, new URL(casket.url).origin, other);
    expect((await mcpPost(casket, t.access, readA)).status).toBe(200);
    expect((await mcpPost(casket, forOther, readA)).status).toBe(401);
  });

  it('an expired access token is 401 with the metadata pointer', async () => {
    const t = kept(await tokensFor(casket, casket.agents.alice!));
    const claims = decodeJwt(t.access);
    const key = new Uint8Array(hkdfSync('sha256', casket.agents.alice!.secretAccessKey, '', 'casket-oauth-access-token-v1', 32));
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ ...claims, iat: now - 600, exp: now - 60 }).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: casket.agents.alice!.accessKeyId }).sign(key);
    const r = await mcpPost(casket, expired, readA);
    expect(r.status).toBe(401);
    expect(r.wwwAuthenticate).toBe(`Bearer error="invalid_token", ${metadataPointer()}`);
  });

  it('a token carries one agent: alice\'s token cannot act as bob, and alice\'s key cannot consent for bob', async () => {
    const t = kept(await tokensFor(casket, casket.agents.alice!));
    // The agent header does not move a token to another agent: the write is still alice's.
    const write = { method: 'tools/call', params: { name: 'write_file', arguments: { path: `${bucket}/by-alice.txt`, content: 'x\n', create_only: true } } };
    const res = await fetch(new URL('/_casket/mcp', casket.url), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${t.access}`, 'x-casket-agent': 'bob' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...write }) });
    expect(res.status).toBe(200);
    const info = await mcpPost(casket, t.access, { method: 'tools/call', params: { name: 'get_file_info', arguments: { path: `${bucket}/by-alice.txt` } } });
    expect(info.json.result.structuredContent.last_writer).toBe('alice');
    // Its agent claim rewritten to bob: the signature no longer holds.
    const [h, p, s] = t.access.split('.');
    const forged = [h, Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), agent: 'bob' })).toString('base64url'), s].join('.');
    expect((await mcpPost(casket, forged, readA)).status).toBe(401);
    // At consent: alice's key names bob.
    const client = await register(casket);
    const { tx } = await login(casket, authorizeUrl(casket, client, { code_challenge: pkce().challenge }), casket.agents.alice!);
    const refused = await consent(casket, { tx: tx!, agent: 'bob' });
    expect(refused.status).toBe(403);
    expect(refused.location).toBeUndefined();
    expect(refused.html).toContain('cannot act as agent');
    // A person's key may bind its token to an agent: the token then acts as that agent.
    const person = kept(await tokensFor(casket, casket.keys.person!, 'bob'));
    expect(decodeJwt(person.access).agent).toBe('bob');
  });

  it('the consent POST needs casket\'s own page: its tx and its Origin', async () => {
    const client = await register(casket);
    const { tx, status } = await login(casket, authorizeUrl(casket, client, { code_challenge: pkce().challenge }), casket.agents.alice!);
    expect(status).toBe(200);
    const refusedWith = async (fields: Record<string, string>, headers?: Record<string, string>) => {
      const r = await consent(casket, fields, headers);
      expect(r.status, JSON.stringify(fields)).toBe(403);
      expect(r.location).toBeUndefined();
    };
    await refusedWith({});
    await refusedWith({ tx: tx!.slice(0, -2) + (tx!.endsWith('AA') ? 'BB' : 'AA') });
    // bob's login tx with its payload swapped for alice's: the MAC is bob's key's, not alice's.
    const bobs = (await login(casket, authorizeUrl(casket, client, { code_challenge: pkce().challenge }), casket.agents.bob!)).tx!;
    await refusedWith({ tx: [tx!.split('.')[0], tx!.split('.')[1], bobs.split('.')[2]].join('.') });
    await refusedWith({ tx: tx! }, { origin: 'https://evil.example' });
    await refusedWith({ tx: tx! }, {});
    // The same tx from casket's page: accepted.
    expect((await consent(casket, { tx: tx! })).location?.searchParams.get('code')).toBeTruthy();
    // The login form itself is refused from another origin.
    expect((await login(casket, authorizeUrl(casket, client, { code_challenge: pkce().challenge }), casket.agents.alice!, { origin: 'https://evil.example' })).status).toBe(403);
  });

  it('an admin already logged in to the console goes straight to the consent, as a person', async () => {
    const origin = new URL(casket.url).origin;
    const loggedIn = await fetch(new URL('/_casket/console/login', casket.url), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', origin }, body: new URLSearchParams({ accessKeyId: casket.admin.accessKeyId, secretAccessKey: casket.admin.secretAccessKey }).toString() });
    const cookie = loggedIn.headers.get('set-cookie')!.split(';')[0]!;
    const client = await register(casket);
    const page = await fetch(authorizeUrl(casket, client, { code_challenge: pkce().challenge }), { headers: { cookie } });
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).toContain('Allow Test client to use casket?');
    expect(html).toContain(casket.admin.accessKeyId);
    const tx = /name="tx" value="([^"]+)"/.exec(html)![1]!;
    secrets.push(tx, cookie);
    expect((await consent(casket, { tx, agent: 'carol' })).location?.searchParams.get('code')).toBeTruthy();
  });

  it('wrong secrets are braked across the console login and this one: 429', async () => {
    const origin = new URL(casket.url).origin;
    const wrong = { accessKeyId: casket.keys.braked!.accessKeyId, secretAccessKey: 'not-the-secret' };
    for (let i = 0; i < 3; i++) {
      const r = await fetch(new URL('/_casket/console/login', casket.url), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', origin }, body: new URLSearchParams(wrong).toString() });
      expect(r.status).toBe(401);
    }
    const url = authorizeUrl(casket, await register(casket), { code_challenge: pkce().challenge });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await login(casket, url, wrong)).status);
    // Five failures are free per key and address (console/login-brake.ts); the sixth, here the third, waits.
    expect(statuses).toEqual([401, 401, 429]);
    // Braked before the secret is compared: even the right one waits.
    expect((await login(casket, url, casket.keys.braked!)).status).toBe(429);
  });

  it('rotating or removing the credential (casket keys rotate, casket keys remove) ends its access and refresh tokens', async () => {
    for (const action of ['rotate', 'remove']) {
      const doomed = casket.keys[action === 'rotate' ? 'rotated' : 'removed']!;
      const t = kept(await tokensFor(casket, doomed));
      expect((await mcpPost(casket, t.access, readA)).status).toBe(200);
      const r = spawnSync(process.execPath, [CLI, 'keys', action, doomed.accessKeyId, '--credentials', casket.credentialsFile], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      // casket reloads the credentials file when it changes.
      await until(async () => (await mcpPost(casket, t.access, readA)).status === 401, `the ${action}d key's token refused`, 5_000);
      expect((await token(casket, { grant_type: 'refresh_token', refresh_token: t.refresh, client_id: t.client.client_id })).body.error, action).toBe('invalid_grant');
    }
  });

  it('no token, code, tx or secret in any log line', async () => {
    expect(secrets.length).toBeGreaterThan(10);
    const log = casket.logs.join('\n');
    expect(log).toContain('oauth token issued');
    for (const s of secrets) expect(log.includes(s), `a secret in the log: ${s.slice(0, 12)}…`).toBe(false);
    for (const cred of [casket.agents.alice!, casket.agents.bob!, casket.keys.person!]) expect(log).not.toContain(cred.secretAccessKey);
    // The request log names paths only: no authorize query (state, challenge), no code.
    const leaked = casket.logs.filter((l) => /[?&](code|code_challenge|refresh_token|state)=/.test(l));
    expect(leaked).toEqual([]);
  });
});
