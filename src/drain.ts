/**
 * The drain after SIGTERM (cli.ts): requests in flight finish, nothing new
 * starts. Closing the listening socket is not enough: a client with an open
 * keep-alive connection goes on sending requests on it, and Node answers
 * them, until the drain's end cuts them mid-transfer. So, from the moment the
 * drain begins:
 * - every response not yet started carries `Connection: close` (RFC 9112
 *   §9.6), so the client opens its next request elsewhere;
 * - a request that arrives on an open connection is refused at once with 503
 *   and `Retry-After` (RFC 9110 §10.2.3), as S3 refuses one it cannot serve
 *   now (ServiceUnavailable: SDKs and CLIs retry it, on a new connection),
 *   and its connection is closed.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { S3_ERRORS } from './vocabulary/errors.js';
import { toXml } from './vocabulary/xml.js';

/** Seconds a refused client waits before retrying: another replica, or this one restarted. */
export const DRAIN_RETRY_AFTER_SECONDS = 2;

const MESSAGE = 'casket is shutting down and takes no new requests; retry on a new connection.';

export class Drain {
  private draining = false;
  private readonly inFlight = new Set<ServerResponse>();

  get active(): boolean {
    return this.draining;
  }

  /** Tracks a response until it is done; false when the request was refused (the drain has begun). */
  admit(incoming: IncomingMessage, outgoing: ServerResponse): boolean {
    if (this.draining) {
      refuse(incoming, outgoing);
      return false;
    }
    this.inFlight.add(outgoing);
    outgoing.once('close', () => this.inFlight.delete(outgoing));
    return true;
  }

  begin(): void {
    this.draining = true;
    // Node writes `Connection: close` for a response that should not keep the connection alive.
    for (const outgoing of this.inFlight) if (!outgoing.headersSent) outgoing.shouldKeepAlive = false;
  }
}

function refuse(incoming: IncomingMessage, outgoing: ServerResponse): void {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  const headers: Record<string, string> = { 'retry-after': String(DRAIN_RETRY_AFTER_SECONDS), connection: 'close', 'x-amz-request-id': requestId };
  if (incoming.method === 'HEAD') {
    outgoing.writeHead(503, { ...headers, 'x-amz-error-code': 'ServiceUnavailable' });
    outgoing.end();
    return;
  }
  const [status] = S3_ERRORS.ServiceUnavailable;
  const body = toXml('Error', { Code: 'ServiceUnavailable', Message: MESSAGE, Resource: (incoming.url ?? '/').split('?')[0]!, RequestId: requestId }, false);
  outgoing.writeHead(status, { ...headers, 'content-type': 'application/xml', 'content-length': String(Buffer.byteLength(body)) });
  outgoing.end(body);
}
