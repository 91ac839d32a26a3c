/**
 * The pages of MCP authorization (src/console/authorize.ts) and the console's
 * "Connected clients" JSON (src/console/connected-clients.ts), with casket in
 * this process (test/helpers/in-process.ts) so that `npm run mutate:rooms`
 * sees them: what a person reads before allowing a client — its name, where
 * the code goes, the agent the tokens act as, what the key's policy allows —
 * every value from the request escaped; and what an admin sees and revokes.
 * The whole flow in a browser is test/oauth/flow.test.ts and
 * test/console/connected-clients.test.ts (spawned caskets).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Credential } from '../../src/auth/credentials.js';
import { parsePolicy } from '../../src/auth/policy.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { authorizeUrl, consent, login, pkce, register, token, tokensFor } from '../oauth/flow.js';
import { consoleLogin } from './login.js';

const REDIRECT = 'http://127.0.0.1:9/callback';
// The console's policy (routes.ts), and the consent page's: the client's redirect origin may take the form's answer.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const CONSENT_CSP = CSP.replace("form-action 'self'", "form-action 'self' http://127.0.0.1:9");
const EVIL = `Evil <b>"Bob's" & co</b>`;
const EVIL_HTML = 'Evil &#60;b&#62;&#34;Bob&#39;s&#34; &#38; co&#60;/b&#62;';

const cred = (accessKeyId: string, policies?: unknown[]): Credential => ({
  accessKeyId, secretAccessKey: `${accessKeyId.toLowerCase()}-secret-0123456789`, ...(policies && { policies: policies.map(parsePolicy) }),
});
const twoPolicies = cred('AKTWOPOLICIES', [
  {
    Statement: [
      { Effect: 'Allow', Action: 's3:GetObject', Resource: 'arn:aws:s3:::notes/*', Condition: { StringLike: { 's3:prefix': ['a/*', 'b/*'], 's3:delimiter': '/' } } },
      { Effect: 'Deny', Action: ['s3:DeleteObject', 's3:PutObject'], Resource: ['arn:aws:s3:::notes/locked/*', 'arn:aws:s3:::x'] },
    ],
  },
  { Statement: { Effect: 'Allow', Action: '*', Resource: '*' } },
]);
const onePolicy = cred('AKONEPOLICY', [{ Statement: { Effect: 'Allow', Action: 's3:ListBucket', Resource: 'arn:aws:s3:::notes' } }]);

let c: InProcessCasket;
beforeAll(async () => {
  c = await startInProcess({ agents: ['alice'], keys: ['person'], credentials: [twoPolicies, onePolicy] });
});
afterAll(async () => {
  await c?.stop();
});

const pageHeadersOf = (res: Response) => Object.fromEntries(['content-type', 'cache-control', 'content-security-policy', 'x-content-type-options', 'referrer-policy', 'x-frame-options'].map((h) => [h, res.headers.get(h)]));
const headersWith = (csp: string) => ({ 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': csp, 'x-content-type-options': 'nosniff', 'referrer-policy': 'same-origin', 'x-frame-options': 'DENY' });
const alert = (html: string) => /<p class="message" role="alert">(.*?)<\/p>/s.exec(html)?.[1];
const policyList = (html: string) => [...(/<ul class="policy">(.*?)<\/ul>/s.exec(html)?.[1] ?? '').matchAll(/<li>(.*?)<\/li>/g)].map((m) => m[1]);

describe('MCP authorization pages', () => {
  it('the login page names the client escaped, posts back to its own authorize URL, and says why a login failed', async () => {
    const client = await register(c, REDIRECT, EVIL);
    const url = authorizeUrl(c, client, { code_challenge: pkce().challenge });
    const res = await fetch(url);
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(pageHeadersOf(res)).toEqual(headersWith(CSP));
    expect(html).toContain('<title>Authorize · casket</title>');
    expect(html).toContain(`<h1>Connect ${EVIL_HTML} to casket</h1>`);
    expect(html).not.toContain('<b>');
    expect(alert(html)).toBe('');
    // The form's action is this very URL (its & escaped): the browser posts the secret back to it.
    const action = /<form method="post" action="([^"]+)"/.exec(html)![1]!;
    expect(action).toBe(`${url.pathname}${url.search}`.replaceAll('&', '&#38;'));
    const back = new URL(action.replaceAll('&#38;', '&'), c.url);

    const wrong = await login(c, back, { ...c.keys.person!, secretAccessKey: 'not-the-secret' });
    expect(wrong.status).toBe(401);
    expect(alert(wrong.html)).toBe('That access key and secret key do not match a casket credential.');
    expect(wrong.html).toContain(`<h1>Connect ${EVIL_HTML} to casket</h1>`);
    expect(wrong.tx).toBeUndefined();
    const right = await login(c, back, c.keys.person!);
    expect(right.status).toBe(200);
    expect(right.tx).toBeDefined();
  });

  it('the consent page shows the client, where the code goes, the agent field and every policy statement in its own words', async () => {
    const client = await register(c, REDIRECT, EVIL);
    const res = await fetch(authorizeUrl(c, client, { code_challenge: pkce().challenge }), {
      method: 'POST', redirect: 'manual',
      headers: { origin: c.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ accessKeyId: twoPolicies.accessKeyId, secretAccessKey: twoPolicies.secretAccessKey }),
    });
    const html = await res.text();
    expect(res.status).toBe(200);
    // The form's answer is a redirect to the client: its origin, and only it, is added to form-action.
    expect(pageHeadersOf(res)).toEqual(headersWith(CONSENT_CSP));
    expect(html).toContain('<title>Allow access · casket</title>');
    expect(html).toContain(`<h1>Allow ${EVIL_HTML} to use casket?</h1>`);
    expect(html).toContain(`<strong>${EVIL_HTML}</strong> asks to use casket's MCP file tools with key <strong>${twoPolicies.accessKeyId}</strong>. After you allow it, casket sends it to <code>${REDIRECT}</code>.`);
    expect(alert(html)).toBe('');
    expect(policyList(html)).toEqual([
      'Policy 1: Allow s3:getobject on arn:aws:s3:::notes/* when s3:prefix StringLike a/* | b/* and s3:delimiter StringLike /',
      'Policy 1: Deny s3:deleteobject, s3:putobject on arn:aws:s3:::notes/locked/*, arn:aws:s3:::x',
      'Policy 2: Allow * on *',
    ]);
    // A key bound to no agent chooses one, or none (itself, as a person).
    expect(html).toContain(`<label for="agent">Agent the client acts as (empty: you, ${twoPolicies.accessKeyId}, as a person)</label>`);
    expect(html).toContain('<input id="agent" name="agent"');
    expect(html).not.toContain('the agent this key is bound to');

    // A name that is no agent's: the same page again, saying why, and no code.
    const tx = /name="tx" value="([^"]+)"/.exec(html)![1]!;
    const refused = await consent(c, { tx, agent: 'two words' });
    expect(refused.status).toBe(403);
    expect(refused.location).toBeUndefined();
    expect(alert(refused.html)).toBe('An agent name is 1 to 128 printable ASCII characters without spaces.');
    expect(policyList(refused.html)).toHaveLength(3);
  });

  it('one policy is shown without numbers; a key with none has full rights; a key bound to an agent names it and offers no field', async () => {
    const client = await register(c, REDIRECT, 'Plain client');
    const consentFor = async (who: { accessKeyId: string; secretAccessKey: string }) => (await login(c, authorizeUrl(c, client, { code_challenge: pkce().challenge }), who)).html;

    expect(policyList(await consentFor(onePolicy))).toEqual(['Allow s3:listbucket on arn:aws:s3:::notes']);
    const alice = await consentFor(c.agents.alice!);
    expect(policyList(alice)).toEqual(['Everything this casket serves: the key has no policy (full rights).']);
    expect(alice).toContain('<p>The client will act as agent <strong>alice</strong>, the agent this key is bound to.</p>');
    expect(alice).not.toContain('name="agent"');
  });

  it('a request casket cannot check is an error page that redirects nowhere', async () => {
    const client = await register(c, REDIRECT, 'Plain client');
    const res = await fetch(authorizeUrl(c, { ...client, client_id: 'made-up-client' }, { code_challenge: pkce().challenge }), { redirect: 'manual' });
    const html = await res.text();
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(pageHeadersOf(res)).toEqual(headersWith(CSP));
    expect(html).toContain('<title>Authorization failed · casket</title>');
    expect(html).toContain('<h1>casket cannot authorize this client</h1>');
    expect(alert(html)).toBe('The client_id is not one casket registered: the client must register again.');
    expect(html).toContain('<p>Nothing was granted. Start again from your MCP client.</p>');
  });
});

describe('the console\'s connected clients', () => {
  interface Row { id: string; clientName: string; clientId: string; agent: string | null; accessKey: string; created: string; lastUsed: string; state: string }
  const API = '/_casket/console/api/connected-clients';
  const listed = async (cookie: string) => {
    const res = await fetch(new URL(API, c.url), { headers: { cookie } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { clients: Row[] }).clients;
  };
  const revoke = (cookie: string, id: string) => fetch(new URL(`${API}/${encodeURIComponent(id)}/revoke`, c.url), { method: 'POST', headers: { cookie, origin: c.url } });
  const tick = () => new Promise((r) => setTimeout(r, 5));

  it('lists every grant, most recently used first, with its state and times; revoking one removes only it', async () => {
    const cookie = await consoleLogin(c.url, c.admin);
    const before = new Date().toISOString();
    const claude = await tokensFor(c, c.agents.alice!);
    await tick();
    // Consented, its code not yet redeemed.
    const pendingClient = await register(c, REDIRECT, 'Pending client');
    const { tx } = await login(c, authorizeUrl(c, pendingClient, { code_challenge: pkce().challenge }), c.keys.person!);
    const pendingCode = (await consent(c, { tx: tx! })).location!.searchParams.get('code')!;
    await tick();
    const ops = await tokensFor(c, c.admin, 'ops');
    const idOf = (t: string) => t.split('.')[0]!;

    let rows = await listed(cookie);
    expect(rows.map((r) => r.id)).toEqual([idOf(ops.refresh), idOf(pendingCode), idOf(claude.refresh)]);
    expect(rows[0]).toMatchObject({ clientName: 'Test client', clientId: ops.client.client_id, agent: 'ops', accessKey: c.admin.accessKeyId, state: 'connected' });
    expect(rows[1]).toMatchObject({ clientName: 'Pending client', clientId: pendingClient.client_id, agent: null, accessKey: c.keys.person!.accessKeyId, state: 'authorizing' });
    expect(rows[2]).toMatchObject({ agent: 'alice', accessKey: c.agents.alice!.accessKeyId, state: 'connected' });
    for (const r of rows) {
      expect(r.created >= before && r.created <= r.lastUsed).toBe(true);
      expect(new Date(r.lastUsed).toISOString()).toBe(r.lastUsed);
    }

    // A refresh is a use: that client moves to the top.
    await tick();
    const refreshed = await token(c, { grant_type: 'refresh_token', refresh_token: claude.refresh, client_id: claude.client.client_id });
    expect(refreshed.status).toBe(200);
    rows = await listed(cookie);
    expect(rows.map((r) => r.id)).toEqual([idOf(claude.refresh), idOf(ops.refresh), idOf(pendingCode)]);
    expect(rows[0]!.lastUsed > rows[0]!.created).toBe(true);

    const res = await revoke(cookie, idOf(ops.refresh));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ revoked: idOf(ops.refresh) });
    expect((await listed(cookie)).map((r) => r.id)).toEqual([idOf(claude.refresh), idOf(pendingCode)]);
    const again = await revoke(cookie, idOf(ops.refresh));
    expect(again.status).toBe(404);
    expect(((await again.json()) as { error: string }).error).toBe('NoSuchGrant');
    for (const r of await listed(cookie)) expect((await revoke(cookie, r.id)).status).toBe(200);
    expect(await listed(cookie)).toEqual([]);
  });

  it('an expired grant is not listed', async () => {
    const cookie = await consoleLogin(c.url, c.admin);
    const now = Date.now();
    await c.casket.services.state.putOAuthGrant({
      id: 'expiredgrant0000000000', clientId: 'x', clientName: 'Expired client', redirectUri: REDIRECT, accessKeyId: c.admin.accessKeyId,
      resource: new URL('/_casket/mcp', c.url).toString(), codeChallenge: 'x', secretHash: 'x', pendingCode: false,
      createdAt: now - 120_000, lastUsedAt: now - 60_000, expiresAt: now - 1,
    });
    expect((await listed(cookie)).map((r) => r.clientName)).not.toContain('Expired client');
  });
});
