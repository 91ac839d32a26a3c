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
import type { Socket } from 'node:net';
import { S3_ERRORS } from './vocabulary/errors.js';
import { toXml } from './vocabulary/xml.js';

/** Seconds a refused client waits before retrying: another replica, or this one restarted. */
export const DRAIN_RETRY_AFTER_SECONDS = 2;

const MESSAGE = 'casket is shutting down and takes no new requests; retry on a new connection.';

/** A connection that has served requests: how many are in flight, and since when none is. */
interface Connection {
  active: number;
  quietSince: number;
}

export class Drain {
  private draining = false;
  private readonly inFlight = new Set<ServerResponse>();
  private readonly connections = new Map<Socket, Connection>();

  get active(): boolean {
    return this.draining;
  }

  /** Tracks a response until it is done; false when the request was refused (the drain has begun). */
  admit(incoming: IncomingMessage, outgoing: ServerResponse): boolean {
    if (this.draining) {
      refuse(incoming, outgoing);
      return false;
    }
    const socket = incoming.socket;
    let connection = this.connections.get(socket);
    if (!connection) {
      const tracked: Connection = { active: 0, quietSince: 0 };
      this.connections.set(socket, (connection = tracked));
      socket.once('close', () => this.connections.delete(socket));
    }
    const counted = connection;
    counted.active++;
    this.inFlight.add(outgoing);
    outgoing.once('close', () => {
      this.inFlight.delete(outgoing);
      counted.active--;
      counted.quietSince = Date.now();
    });
    return true;
  }

  /**
   * Closes the connections that have had nothing in flight for `quietMs`.
   * Not Node's closeIdleConnections, which closes a connection the moment its
   * response ends — before the request pipelined behind it is read, when the
   * sweep falls between the two (seen on a loaded machine): that request then
   * met a closed socket instead of its 503.
   */
  sweep(quietMs: number): void {
    const now = Date.now();
    for (const [socket, c] of this.connections) if (c.active === 0 && now - c.quietSince >= quietMs) socket.destroy();
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
