/**
 * A bearer token ends at its expiry (docs/design.md §8; src/mcp/token.ts): a
 * token minted by `casket mcp token --ttl 5` works at once and is refused 401,
 * with `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750 §3.1), once
 * its time is up. Issue 43's audit removed the expiry check and no test noticed.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { mcpEndpoint, mintToken } from '../helpers/mcp.js';

let casket: RunningCasket;
const bucket = 'expiry';

beforeAll(async () => {
  casket = await startCasket({ agents: ['alice'] });
  const admin = sdk(casket.url, casket.admin);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'notes.md', Body: 'hello\n' }));
  admin.destroy();
});
afterAll(async () => {
  await casket?.stop();
});

/** One tools/call of read_text_file with the token, as an HTTP client sends it. */
function readWith(token: string): Promise<Response> {
  return fetch(mcpEndpoint(casket), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_text_file', arguments: { path: `${bucket}/notes.md` } } }),
  });
}

describe('MCP bearer token expiry', () => {
  it('a token works until its expiry, then is refused 401 invalid_token', async () => {
    // Long enough to be used at once on a loaded machine (the mint is a process of its own), short enough to wait out.
    const token = mintToken(casket.agents.alice!, { ttl: 5 });
    // The expiry the token carries (seconds since the epoch), as casket reads it.
    const expires = (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { e: number }).e * 1000;
    const fresh = await readWith(token);
    expect(fresh.status).toBe(200);
    expect(await fresh.text()).toContain('hello');

    await new Promise((r) => setTimeout(r, Math.max(expires - Date.now(), 0) + 50));
    const late = await readWith(token);
    expect(late.status).toBe(401);
    expect(late.headers.get('www-authenticate')).toContain('invalid_token');
    expect(((await late.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
  });
});
