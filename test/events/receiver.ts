/**
 * A webhook receiver for the tests: a real node:http server on 127.0.0.1
 * whose answer the test sets per request — 200, 500, or never (a hang) —
 * recording every delivery with its headers, and checking its signature
 * as a receiver should (events/webhooks.ts).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Rec } from './sse.js';

export type Answer = 'ok' | 'fail' | 'hang';

export interface Delivery {
  eventId: string;
  record: Rec;
  /** The signature matched the secret and the timestamp. */
  verified: boolean;
  answered: Answer;
  at: number;
  headers: IncomingHttpHeaders;
}

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** What the next requests get: one answer for all, or a function of the request's number (1-based). */
  answer: Answer | ((n: number) => Answer);
  /** Deliveries answered 2xx, in order. */
  acknowledged(): Delivery[];
  /** Hung deliveries whose connection casket still holds open (it has not given up on them yet). */
  hanging(): number;
  close(): Promise<void>;
}

export async function startReceiver(secret: string): Promise<Receiver> {
  const hung: ServerResponse[] = [];
  let n = 0;
  const receiver: Receiver = {
    url: '',
    deliveries: [],
    answer: 'ok',
    acknowledged: () => receiver.deliveries.filter((d) => d.answered === 'ok'),
    hanging: () => hung.filter((res) => !res.destroyed && !res.socket?.destroyed).length,
    close: async () => {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const timestamp = String(req.headers['x-casket-timestamp'] ?? '');
      const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`);
      const given = Buffer.from(String(req.headers['x-casket-signature'] ?? ''));
      const fresh = Math.abs(Date.now() / 1000 - Number(timestamp)) < 300;
      const verified = fresh && given.length === expected.length && timingSafeEqual(given, expected);
      const answered = typeof receiver.answer === 'function' ? receiver.answer(++n) : (++n, receiver.answer);
      receiver.deliveries.push({ eventId: String(req.headers['x-casket-event-id']), record: (JSON.parse(body) as { Records: Rec[] }).Records[0]!, verified, answered, at: Date.now(), headers: req.headers });
      if (answered === 'hang') {
        hung.push(res);
        return;
      }
      res.writeHead(answered === 'ok' ? 200 : 500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}
