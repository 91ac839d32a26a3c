/**
 * Request bodies that stop arriving are ended (issue 37, finding 6;
 * src/body-timeout.ts): a client that declares a body and sends one byte gets
 * RequestTimeout and a closed socket after --body-timeout-ms without a byte,
 * and nothing of its body is written; an upload that is slow but moving
 * completes however long it takes in all.
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { signRequest } from '../helpers/raw.js';

const IDLE_MS = 400;
const BUCKET = 'slow-bodies';

interface Exchange {
  /** Everything the server sent before it closed. */
  answer: string;
  /** ms from the last byte sent to the close. */
  closedAfterMs: number;
}

/** Sends the head and `first` body bytes on a raw socket, then nothing; resolves when casket closes it (or after `giveUpMs`). */
function stall(url: string, head: string, first: Buffer, giveUpMs = 5000): Promise<Exchange> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    let answer = '';
    let sentAt = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ answer, closedAfterMs: Infinity });
    }, giveUpMs);
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ answer, closedAfterMs: Date.now() - sentAt });
    });
    socket.write(head);
    socket.write(first, () => (sentAt = Date.now()));
  });
}

function headOf(method: string, path: string, headers: Record<string, string>): string {
  return [`${method} ${path} HTTP/1.1`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
}

describe('request body timeout', () => {
  let c: InProcessCasket;
  beforeAll(async () => {
    c = await startInProcess({ flags: { bodyTimeoutMs: String(IDLE_MS) } });
    await sdk(c.url, c.admin).send(new CreateBucketCommand({ Bucket: BUCKET }));
  });
  afterAll(async () => c?.stop());

  it('answers RequestTimeout and closes a PutObject whose body stops after one byte, and writes nothing', async () => {
    const { headers, path } = await signRequest(c.url, c.admin, { method: 'PUT', path: `/${BUCKET}/stalled.bin`, headers: { 'content-length': '1000000' }, payloadHash: 'UNSIGNED-PAYLOAD' });
    const { answer, closedAfterMs } = await stall(c.url, headOf('PUT', path, headers), Buffer.from('x'));
    expect(closedAfterMs).toBeGreaterThanOrEqual(IDLE_MS - 50);
    expect(closedAfterMs).toBeLessThan(IDLE_MS + 1500);
    // AWS's wording and status for this code (400, https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html): SDKs retry it.
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('<Code>RequestTimeout</Code>');
    expect(answer.toLowerCase()).toContain('connection: close');
    const head = await failure(sdk(c.url, c.admin).send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'stalled.bin' })));
    expect(head.status).toBe(404);
  });

  it('answers 408 and closes a POST to a casket endpoint whose body stops after one byte', async () => {
    const u = new URL(c.url);
    const { answer, closedAfterMs } = await stall(c.url, headOf('POST', '/_casket/mcp', { host: u.host, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': '1000000' }), Buffer.from('['));
    expect(closedAfterMs).toBeLessThan(IDLE_MS + 1500);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('"RequestTimeout"');
  });

  it('lets an upload that is slow but moving finish, however long it takes in all', async () => {
    const chunks = Array.from({ length: 10 }, (_, i) => Buffer.alloc(4096, 97 + i));
    const body = Buffer.concat(chunks);
    const { headers, path } = await signRequest(c.url, c.admin, { method: 'PUT', path: `/${BUCKET}/slow.bin`, headers: { 'content-length': String(body.length) }, payloadHash: 'UNSIGNED-PAYLOAD' });
    const u = new URL(c.url);
    const started = Date.now();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(u.port), u.hostname);
      let text = '';
      socket.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.includes('\r\n\r\n')) {
          socket.end();
          resolve(text);
        }
      });
      socket.on('error', reject);
      socket.write(headOf('PUT', path, headers));
      let i = 0;
      // Each chunk well inside the idle bound, the whole well beyond it.
      const next = () => {
        socket.write(chunks[i++]!);
        if (i < chunks.length) setTimeout(next, IDLE_MS / 2);
      };
      next();
    });
    expect(Date.now() - started).toBeGreaterThan(IDLE_MS * 4);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    const got = await sdk(c.url, c.admin).send(new GetObjectCommand({ Bucket: BUCKET, Key: 'slow.bin' }));
    expect((await bytes(got.Body)).equals(body)).toBe(true);
  });
});
