/**
 * --public-url (docs/authorization.md): behind a TLS-terminating proxy the
 * request casket sees is http, but the client connected to https — every
 * document, challenge and token names the public URL, and a token for the
 * URL casket happens to be reached at directly is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { authorizeUrl, mcpPost, pkce, register, tokensFor } from './flow.js';

const PUBLIC = 'https://casket.example';
let casket: RunningCasket;

beforeAll(async () => {
  casket = await startCasket({ agents: ['alice'], args: ['--public-url', `${PUBLIC}/`] });
});
afterAll(async () => {
  await casket?.stop();
});

describe('--public-url', () => {
  it('names the public URL as issuer, resource and metadata pointer; a token binds to it', async () => {
    const prm = (await (await fetch(new URL('/.well-known/oauth-protected-resource', casket.url))).json()) as { resource: string; authorization_servers: string[] };
    expect(prm).toMatchObject({ resource: `${PUBLIC}/_casket/mcp`, authorization_servers: [PUBLIC] });
    const as = (await (await fetch(new URL('/.well-known/oauth-authorization-server', casket.url))).json()) as { issuer: string; token_endpoint: string };
    expect(as).toMatchObject({ issuer: PUBLIC, token_endpoint: `${PUBLIC}/_casket/oauth/token` });
    const anonymous = await mcpPost(casket, undefined, { method: 'ping' });
    expect(anonymous.wwwAuthenticate).toBe(`Bearer resource_metadata="${PUBLIC}/.well-known/oauth-protected-resource/_casket/mcp"`);
    // The resource a client asks for is the public one; the direct address is another resource.
    const client = await register(casket);
    const direct = await fetch(authorizeUrl(casket, client, { code_challenge: pkce().challenge }), { redirect: 'manual' });
    expect(new URL(direct.headers.get('location')!).searchParams.get('error')).toBe('invalid_target');
    const t = await tokensFor(casket, casket.agents.alice!, '', `${PUBLIC}/_casket/mcp`);
    expect((await mcpPost(casket, t.access, { method: 'ping' })).status).toBe(200);
  });
});
