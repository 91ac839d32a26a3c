/**
 * A minimal S3 client for load generation: node:http with a keep-alive Agent
 * (one socket per worker), requests signed with SigV4 (signer.mjs), bodies
 * sent from Buffers or streamed from a Readable with backpressure, response
 * bodies counted and dropped unless asked for (an S3 client must always
 * consume the body, or the socket is never reused).
 */
import { Agent, request as httpRequest } from 'node:http';
import { pipeline } from 'node:stream';
import { fastSigner, sha256hex, smithySigner } from './signer.mjs';

export const EMPTY_SHA256 = sha256hex('');

export class S3Client {
  /**
   * @param url http://127.0.0.1:PORT
   * @param cred {accessKeyId, secretAccessKey}
   */
  constructor(url, cred, { signer = 'fast', maxSockets = 64 } = {}) {
    const u = new URL(url);
    this.url = url;
    this.hostname = u.hostname;
    this.port = Number(u.port);
    this.host = u.host;
    this.cred = cred;
    this.signer = signer === 'smithy' ? smithySigner(cred) : fastSigner(cred);
    this.agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo' });
  }

  close() {
    this.agent.destroy();
  }

  /**
   * @param options.body Buffer | Readable | undefined
   * @param options.payloadHash hex SHA-256 of the body, or 'UNSIGNED-PAYLOAD'
   * @param options.contentLength required with a Readable body (unless chunked)
   * @param options.chunked send with Transfer-Encoding: chunked and no Content-Length
   *        (as the AWS SDK v3 sends aws-chunked bodies); not a signed header, as in the SDK
   * @param options.headers extra headers, signed
   * @param options.collect keep the response body (always kept for status ≥ 300)
   * @param options.onData called with each response chunk (e.g. to hash a large GET)
   * @returns {Promise<{status, headers, bytes, body?}>}
   */
  async request(method, path, options = {}) {
    const { body, headers = {}, collect = false, onData, timeoutMs = 60000 } = options;
    const payloadHash = options.payloadHash ?? (body === undefined ? EMPTY_SHA256 : Buffer.isBuffer(body) ? sha256hex(body) : 'UNSIGNED-PAYLOAD');
    const toSign = { host: this.host, 'x-amz-content-sha256': payloadHash, ...headers };
    const signed = await this.signer.sign(method, path, toSign);
    const length = Buffer.isBuffer(body) ? body.length : options.contentLength;
    if (options.chunked) signed['transfer-encoding'] = 'chunked';
    else if (length !== undefined) signed['content-length'] = String(length);
    signed['user-agent'] = 'casket-bench/1';
    return new Promise((resolve, reject) => {
      const req = httpRequest({ agent: this.agent, hostname: this.hostname, port: this.port, method, path, headers: signed }, (res) => {
        let bytes = 0;
        const keep = collect || res.statusCode >= 300;
        const chunks = keep ? [] : undefined;
        res.on('data', (c) => {
          bytes += c.length;
          if (chunks) chunks.push(c);
          if (onData) onData(c);
        });
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, bytes, body: chunks && Buffer.concat(chunks) }));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('response aborted')));
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
      req.on('error', reject);
      if (body === undefined) req.end();
      else if (Buffer.isBuffer(body)) req.end(body);
      else pipeline(body, req, (err) => err && req.destroy(err));
    });
  }
}

/** S3 error code of an XML error body. */
export function errorCode(body) {
  return /<Code>([^<]*)<\/Code>/.exec(body?.toString('utf8') ?? '')?.[1];
}
