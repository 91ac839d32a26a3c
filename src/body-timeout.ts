/**
 * A bound on slow request bodies, as nginx's client_body_timeout
 * (https://nginx.org/en/docs/http/ngx_http_core_module.html#client_body_timeout):
 * the time between two successive arrivals of a body's bytes, not the time
 * the whole body takes. An upload that is slow but moving never trips it; a
 * client that declares a body and stops sending does, after `idleMs`.
 *
 * Only the client's silence counts. The clock stands still while casket is
 * the one not reading (the request's buffer is full because a handler, the
 * spool or the upstream is behind: backpressure) and while the client waits
 * for casket's `100 Continue` (RFC 9110 §10.1.1), which casket sends only
 * after authentication and preconditions passed.
 *
 * Node's own requestTimeout bounds a whole request, which would cut a large
 * upload that is merely slow; server.ts leaves it off and uses this instead.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface BodyWatchOptions {
  idleMs: number;
  /** True while the client is entitled to wait (for 100 Continue). */
  waiting?: () => boolean;
  /** The body went quiet for idleMs: answer and close (the watch has stopped). */
  onTimeout: () => void;
}

function hasBody(incoming: IncomingMessage): boolean {
  const length = incoming.headers['content-length'];
  return (length !== undefined && length !== '0') || incoming.headers['transfer-encoding'] !== undefined;
}

/** Watches one request's body until it is complete or the exchange is over. */
export function watchBody(incoming: IncomingMessage, outgoing: ServerResponse, options: BodyWatchOptions): void {
  if (!hasBody(incoming) || incoming.complete) return;
  const socket = incoming.socket;
  let lastBytes = socket.bytesRead;
  let quietSince = Date.now();
  const timer = setInterval(() => {
    if (incoming.complete || socket.destroyed) return stop();
    const now = Date.now();
    const casketBehind = incoming.readableLength >= incoming.readableHighWaterMark;
    if (socket.bytesRead !== lastBytes || casketBehind || options.waiting?.()) {
      lastBytes = socket.bytesRead;
      quietSince = now;
      return;
    }
    if (now - quietSince >= options.idleMs) {
      stop();
      options.onTimeout();
    }
  }, Math.max(10, Math.min(1000, Math.floor(options.idleMs / 4))));
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    incoming.off('end', stop);
    outgoing.off('close', stop);
  };
  incoming.once('end', stop);
  outgoing.once('close', stop);
}

/**
 * Answers a request whose body timed out, if nothing was answered yet, and
 * closes the connection once that answer is out. The request itself is
 * ended too: Node ends a request when its socket closes only while its
 * answer is still owed, so with the answer out, the handler still reading
 * the body would wait for ever (and keep what it had spilled to disk). Now it
 * sees the body end early (IncompleteBody), so nothing partial is committed
 * (the write path commits only a whole, verified body) and it cleans up.
 */
export function endTimedOut(incoming: IncomingMessage, outgoing: ServerResponse, answer: { status: number; headers: Record<string, string>; body: string }): void {
  const close = (): void => {
    incoming.destroy();
    incoming.socket.destroy();
  };
  if (outgoing.headersSent || outgoing.destroyed) return close();
  try {
    outgoing.writeHead(answer.status, { ...answer.headers, 'content-length': String(Buffer.byteLength(answer.body)), connection: 'close' });
    outgoing.end(answer.body, close);
  } catch {
    close();
  }
}
