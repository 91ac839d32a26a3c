/**
 * Under `--etag-suffix auto`, an S3 client that names itself nowhere (no
 * User-Agent) is answered `"<sha256>-1"` ETags, the form MD5-checking
 * clients accept (src/s3/handle.ts). The MCP tools call the same S3 path in
 * process under their own user agent, so what a model is shown is the plain
 * `"<sha256>"`, the form it hands back as expected_etag (design.md §12).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, httpClient, mintToken, startMcpCasket, type McpCasket } from '../helpers/mcp.js';
import { viewsOf } from '../helpers/model-view.js';
import { raw } from '../helpers/raw.js';

const bucket = 'tool-etags';
const body = 'plain etag\n';
const hex = createHash('sha256').update(body).digest('hex');
let casket: McpCasket;

beforeAll(async () => {
  casket = await startMcpCasket({ agents: ['ana'], flags: { etagSuffix: 'auto' } });
  expect((await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}` })).status).toBe(200);
  expect((await raw(casket.url, casket.admin, { method: 'PUT', path: `/${bucket}/f.txt`, body })).status).toBe(200);
});
afterAll(async () => {
  await casket?.stop();
});

describe('ETags under --etag-suffix auto', () => {
  it('an S3 GET without a user agent is answered the suffixed form', async () => {
    const res = await raw(casket.url, casket.admin, { method: 'GET', path: `/${bucket}/f.txt`, headers: { 'user-agent': '' } });
    expect(res.status).toBe(200);
    expect(res.headers.etag).toBe(`"${hex}-1"`);
  });

  it('a tool shows the model the plain form in every client view', async () => {
    const client = await httpClient(casket, mintToken(casket.agents.ana!));
    try {
      const result = await call(client, 'read_text_file', { path: `${bucket}/f.txt` });
      for (const [name, view] of Object.entries(viewsOf(result))) {
        expect(view.text, name).toContain(hex);
        expect(view.text, name).not.toContain(`${hex}-1`);
      }
    } finally {
      await client.close();
    }
  });
});
