/**
 * A Server-Sent Events reader for the tests: GET /_casket/events signed
 * (SigV4, helpers/raw.ts) or not, over node:http, parsing messages as the
 * HTML spec's "event stream interpretation" does (id, event, data lines, a
 * blank line dispatches; comments ignored) and collecting them.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Cred } from '../helpers/casket.js';
import { signRequest } from '../helpers/raw.js';

export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

/** An S3 event record as the stream sends it (events/record.ts), the fields the tests read. */
export interface Rec {
  eventName: string;
  eventSource: string;
  eventTime: string;
  s3: { bucket: { name: string }; object: { key: string; eTag?: string; size?: number; versionId?: string; sequencer: string } };
  casket: { operation: string; agent?: string; accessKey?: string; previousETag?: string; merged?: boolean; reason?: string; status?: number; code?: string; currentETag?: string };
}

export interface Subscription {
  status: number;
  headers: IncomingMessage['headers'];
  messages: SseMessage[];
  /** Records of the `message` events, in order, each with its SSE id. */
  records(): Array<Rec & { id: string }>;
  /** Comments seen (heartbeats). */
  comments: string[];
  /** Resolves once `test` holds over the records, or rejects after `ms`. */
  until(test: (records: Array<Rec & { id: string }>) => boolean, ms?: number): Promise<Array<Rec & { id: string }>>;
  ended: Promise<void>;
  close(): void;
  body: string;
}

export async function subscribe(url: string, cred: Cred | undefined, path = '/_casket/events', headers: Record<string, string> = {}): Promise<Subscription> {
  const u = new URL(url);
  const signed = cred ? await signRequest(url, cred, { method: 'GET', path, headers }) : { headers: { host: u.host, ...headers }, path };
  return new Promise((resolve, reject) => {
    let req: ClientRequest;
    const messages: SseMessage[] = [];
    const comments: string[] = [];
    const waiters = new Set<() => void>();
    let buffer = '';
    let body = '';
    let current: { id?: string; event?: string; data: string[] } = { data: [] };
    const feed = (text: string) => {
      buffer += text;
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        if (line === '') {
          if (current.data.length > 0 || current.event) messages.push({ ...(current.id !== undefined && { id: current.id }), event: current.event ?? 'message', data: current.data.join('\n') });
          current = { data: [] };
          continue;
        }
        if (line.startsWith(':')) {
          comments.push(line.slice(1).trim());
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') current.id = value;
        else if (field === 'event') current.event = value;
        else if (field === 'data') current.data.push(value);
      }
      for (const w of waiters) w();
    };
    let endResolve: () => void;
    const ended = new Promise<void>((r) => (endResolve = r));
    req = httpRequest({ host: u.hostname, port: u.port, method: 'GET', path: signed.path, headers: signed.headers }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
        if (res.statusCode === 200) feed(chunk);
      });
      res.on('end', () => endResolve());
      res.on('close', () => endResolve());
      res.on('error', () => endResolve());
      const records = () => messages.filter((m) => m.event === 'message').map((m) => ({ ...(JSON.parse(m.data) as { Records: Rec[] }).Records[0]!, id: m.id! }));
      const sub: Subscription = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        messages,
        comments,
        records,
        ended,
        get body() {
          return body;
        },
        until(test, ms = 10_000) {
          return new Promise((ok, fail) => {
            const check = () => {
              if (test(records())) {
                waiters.delete(check);
                clearTimeout(timer);
                ok(records());
              }
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`events not seen within ${ms} ms; got ${JSON.stringify(records().map((r) => [r.eventName, r.s3.object.key]))}`));
            }, ms);
            waiters.add(check);
            check();
          });
        },
        close() {
          req.destroy();
        },
      };
      resolve(sub);
    });
    req.on('error', reject);
    req.end();
  });
}
