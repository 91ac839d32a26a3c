/**
 * After --body-timeout-ms answers a stalled upload (body-timeout.ts), the
 * request is over on casket's side too: the PutObject handler, which was
 * waiting for the rest of the body, sees it end (IncompleteBody), logs its
 * request and removes the part of the body it had spilled to disk. Before,
 * the socket was closed after the answer but the request never ended — Node
 * ends a request whose answer is out only when told to — so the handler
 * waited for ever and the spilled blob stayed until the next start.
 */
import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { until } from '../helpers/poll.js';
import { signRequest } from '../helpers/raw.js';
import { upstreamKindFromEnv } from '../helpers/upstream.js';

let casket: RunningCasket;
beforeAll(async () => {
  casket = await startCasket({ args: ['--body-timeout-ms', '400'] });
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: 'stalls' }));
});
afterAll(async () => casket?.stop());

/** Blob files of the embedded store (backends/fs/blobs.ts): bodies past 64 KiB spill there as they arrive. */
function blobs(): string[] {
  const root = join(casket.dataDir, 'blobs');
  return existsSync(root) ? readdirSync(root).flatMap((d) => readdirSync(join(root, d))) : [];
}

it('a PutObject stalled past the body timeout: 400 RequestTimeout, its handler ends, nothing of it left on disk', async () => {
  const { headers, path } = await signRequest(casket.url, casket.admin, { method: 'PUT', path: '/stalls/half.bin', headers: { 'content-length': '1000000' }, payloadHash: 'UNSIGNED-PAYLOAD' });
  const u = new URL(casket.url);
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    let text = '';
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => (clearTimeout(timer), resolve(text)));
    socket.write([`PUT ${path} HTTP/1.1`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n'));
    socket.write(Buffer.alloc(200 * 1024, 1));
  });
  expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  expect(answer).toContain('<Code>RequestTimeout</Code>');
  // The handler's own end: its request line (status as it saw it).
  await until(() => casket.logs.some((l) => l.includes('"operation":"PutObject"') && l.includes('"key":"half.bin"')), 'the stalled PutObject to end and log its request');
  if (!upstreamKindFromEnv()) await until(() => blobs().length === 0, `the spilled part of the body to be removed (${blobs().length} blob files)`);
});
