/**
 * No upstream ETag leaks through a forwarded operation (docs/design.md §2,
 * src/backends/s3/forward.ts), against a scripted upstream on port 0 so every
 * case is certain: an `ETag` response header is dropped, a text answer that
 * names an <ETag> is refused (501 NotImplemented) instead of passed on, and
 * answers without one — XML, or binary streams — go through whole.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwardUpstream } from '../../../src/backends/s3/index.js';
import { UpstreamClient } from '../../../src/backends/s3/client.js';
import { bytes } from './upstream-suite.js';

const MD5_ETAG = '"d41d8cd98f00b204e9800998ecf8427e"';
const ANSWERS: Record<string, { type: string; body: string }> = {
  attributes: { type: 'application/xml', body: `<?xml version="1.0"?><GetObjectAttributesResponse><ETag>d41d8cd98f00b204e9800998ecf8427e</ETag><ObjectSize>0</ObjectSize></GetObjectAttributesResponse>` },
  html: { type: 'text/html; charset=utf-8', body: `<ListVersionsResult><Version><Key>k</Key><ETag>${MD5_ETAG}</ETag></Version></ListVersionsResult>` },
  tagging: { type: 'application/xml', body: '<Tagging><TagSet><Tag><Key>team</Key><Value>agents</Value></Tag></TagSet></Tagging>' },
  torrent: { type: 'application/x-bittorrent', body: 'd8:announce<ETag>binary, passed as is' },
};

let server: Server;
let client: UpstreamClient;

beforeAll(async () => {
  server = createServer((req, res) => {
    const sub = Object.keys(ANSWERS).find((name) => req.url?.includes(`?${name}`)) ?? 'tagging';
    const answer = ANSWERS[sub]!;
    res.writeHead(200, { 'content-type': answer.type, etag: MD5_ETAG, 'x-amz-version-id': 'null' });
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  client = new UpstreamClient({ url: `http://127.0.0.1:${port}`, accessKey: 'k', secretKey: 's', region: 'us-east-1' });
});

afterAll(async () => {
  client?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

describe('forwarded answers', () => {
  it('drop the upstream ETag header and pass an answer without <ETag> through whole', async () => {
    const res = await forwardUpstream(client, { method: 'GET', bucket: 'b', key: 'k', query: { tagging: '' }, headers: {} });
    expect(res.status).toBe(200);
    expect(res.headers.etag).toBeUndefined();
    expect(res.headers['x-amz-version-id']).toBe('null');
    expect((await bytes(res.body)).toString()).toBe(ANSWERS.tagging!.body);
  });

  it.each(['attributes', 'html'])('refuse a text answer that names an <ETag> (%s) with 501', async (sub) => {
    await expect(forwardUpstream(client, { method: 'GET', bucket: 'b', key: 'k', query: { [sub]: '' }, headers: {} })).rejects.toMatchObject({ code: 'NotImplemented', status: 501 });
  });

  it('stream a binary answer through unread', async () => {
    const res = await forwardUpstream(client, { method: 'GET', bucket: 'b', key: 'k', query: { torrent: '' }, headers: {} });
    expect(res.headers.etag).toBeUndefined();
    expect((await bytes(res.body)).toString()).toBe(ANSWERS.torrent!.body);
  });
});
