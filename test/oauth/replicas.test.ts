/**
 * Two caskets on one Redis, reached by one name as replicas behind one
 * address are (docs/authorization.md, "Several replicas"): a token issued
 * by one is honoured by the other, a refresh token is redeemed once across
 * both, and a grant revoked through one (its old refresh token used again
 * there) ends the access token on the other at its next request — not at
 * its expiry.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { tokensFor } from './flow.js';

const haveRedis = need('redis-server', hasRedis());

/** A POST to `casket` with the Host header of the shared name. */
function post(casket: RunningCasket, host: string, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: casket.port, path, method: 'POST', headers: { ...headers, host, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe.runIf(haveRedis)('OAuth grants shared by two caskets on one Redis', () => {
  let redis: RunningRedis;
  let one: RunningCasket;
  let two: RunningCasket;
  beforeAll(async () => {
    redis = await startRedis();
    const args = ['--state', 'redis', '--redis-url', redis.url];
    one = await startCasket({ agents: ['alice'], args });
    two = await startCasket({ agents: ['alice'], args, credentialsOf: one });
  });
  afterAll(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
    await redis?.stop();
  });

  it('a token from one replica works on the other; a refresh token reused on one revokes the grant on both at once', async () => {
    const name = new URL(one.url).host;
    const ping = (c: RunningCasket, access: string) => post(c, name, '/_casket/mcp', { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${access}` }, '{"jsonrpc":"2.0","id":1,"method":"ping"}');
    const refresh = (c: RunningCasket, rt: string, clientId: string) => post(c, name, '/_casket/oauth/token', { 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams({ grant_type: 'refresh_token', refresh_token: rt, client_id: clientId }).toString());
    const t = await tokensFor(one, one.agents.alice!);
    expect((await ping(two, t.access)).status).toBe(200);
    // Rotated on two; the old one is then spent on one as well.
    const rotated = await refresh(two, t.refresh, t.client.client_id);
    expect(rotated.status, rotated.body).toBe(200);
    const fresh = JSON.parse(rotated.body) as { access_token: string; refresh_token: string };
    expect((await ping(one, fresh.access_token)).status).toBe(200);
    const reused = await refresh(one, t.refresh, t.client.client_id);
    expect(reused.status).toBe(400);
    expect(JSON.parse(reused.body).error).toBe('invalid_grant');
    // Revoked through one: the newest access token ends on two at once, though it has minutes to live.
    expect((await ping(two, fresh.access_token)).status).toBe(401);
    expect((await refresh(two, fresh.refresh_token, t.client.client_id)).status).toBe(400);
  });
});
