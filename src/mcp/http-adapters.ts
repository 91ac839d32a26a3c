/**
 * The MCP endpoint's request and answer (http.ts) from and to the two ways a
 * request reaches it: node:http directly (server.ts, for a POST to exactly
 * /_casket/mcp: every tool call) and the Hono app (anything else under that
 * path: a query string, GET, ...).
 *
 * Why two: the Hono route builds a web Request over the socket, reads the body
 * through web streams and writes a web Response back — together a fifth of a
 * small read_text_file's CPU (--cpu-prof; docs/performance.md). Both ways hand
 * the endpoint the same request: the headers as web Headers give them
 * (lowercase, a repeated header's values joined with ", "), the path and query.
 */
import type { IncomingMessage } from 'node:http';
import type { McpHttpAnswer, McpHttpRequest } from './http.js';

/** From node:http. `url` is the request target as sent (server.ts takes only the exact path here). */
export function fromNode(incoming: IncomingMessage, url: string): McpHttpRequest {
  const headers: Record<string, string> = {};
  const raw = incoming.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return {
    method: incoming.method ?? 'GET',
    url,
    headers,
    body: (max) =>
      new Promise<Buffer | undefined>((resolve, reject) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          incoming.off('data', onData);
          incoming.off('end', onEnd);
          incoming.off('error', onError);
          incoming.off('close', onClose);
        };
        const onData = (chunk: Buffer) => {
          size += chunk.length;
          if (size > max) {
            // Unread past the limit: the answer says Connection: close (http.ts).
            done();
            incoming.pause();
            resolve(undefined);
            return;
          }
          chunks.push(chunk);
        };
        const onEnd = () => {
          done();
          resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
        };
        const onError = (e: Error) => {
          done();
          reject(e);
        };
        // Closed before its end: the client went away, or the body timed out (body-timeout.ts answered it).
        const onClose = () => onError(new Error('The request was closed before its body ended.'));
        incoming.on('data', onData);
        incoming.on('end', onEnd);
        incoming.on('error', onError);
        incoming.on('close', onClose);
      }),
  };
}

/** From the Hono route's web Request. */
export function fromWeb(request: Request): McpHttpRequest {
  const url = new URL(request.url);
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => (headers[name] = value));
  return {
    method: request.method,
    url: url.pathname + url.search,
    headers,
    body: async (max) => {
      const chunks: Buffer[] = [];
      let size = 0;
      if (!request.body) return Buffer.alloc(0);
      const reader = request.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return Buffer.concat(chunks);
        size += value.length;
        if (size > max) {
          await reader.cancel();
          return undefined;
        }
        chunks.push(Buffer.from(value));
      }
    },
  };
}

/** To the Hono route's web Response. */
export function toWeb(answer: McpHttpAnswer): Response {
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}
