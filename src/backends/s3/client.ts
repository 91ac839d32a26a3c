/**
 * The upstream S3 client of the `s3` backend: one signed HTTP request at a
 * time, over a keep-alive pool, with the habits undici's README asks of every
 * HTTP client ("always consume or cancel the response body").
 *
 * - Signing: AWS Signature V4 (signer.ts, held to @smithy/signature-v4 by
 *   its test) with the upstream's credentials (never those casket issues to
 *   its clients). Path-style addressing; the key is percent-encoded once
 *   (RFC 3986 unreserved kept) and signed as is (the S3 rule of
 *   https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html).
 * - Bodies go up PLAIN with `Content-Length`, never aws-chunked — Ceph RGW 16
 *   rejects the STREAMING-*-TRAILER form (measured). A spooled file or buffer,
 *   or a stream whose SHA-256 the client declared, goes with that literal
 *   `x-amz-content-sha256`, so the upstream itself refuses bytes that do not
 *   match it; a stream whose SHA-256 is known only at its end goes as
 *   `UNSIGNED-PAYLOAD` (objects.ts checks the upstream's MD5 ETag after).
 *   Either way `HoldBack` keeps the last chunk until casket's own checks
 *   passed.
 * - Only headers casket chose are sent: nothing hop-by-hop, no `Expect`.
 * - node:http, not undici: measured as bare pass-through proxies in front of
 *   Ceph RGW (scripts/bench/node-proxy.mjs against undici-proxy.mjs, c=8,
 *   alternating), undici's `Pool.stream` cost as much or more CPU per request
 *   in every cell — 4 KiB GET 329 vs 317 µs, 4 KiB PUT 377 vs 319 µs, 8 MiB GET
 *   13.7 vs 9.8 ms, 8 MiB PUT 18.0 vs 7.1 ms — so casket keeps node:http.
 * - Timeouts: connecting (`connectTimeoutMs`) and idle sockets
 *   (`idleTimeoutMs`, while waiting for a response or between body bytes), so
 *   a down or stalled upstream turns into a retryable 503 instead of a client
 *   hanging forever.
 * - Failures: connection errors and timeouts → 503 ServiceUnavailable; an
 *   upstream 503 → SlowDown; other 5xx → InternalError; 4xx with an S3 error
 *   code casket knows → that S3Error (NoSuchBucket, NoSuchKey, NoSuchUpload,
 *   InvalidPart, EntityTooSmall, BucketNotEmpty, ...); an upstream refusing
 *   casket's own signature → InternalError (the client did nothing wrong).
 *   Error responses per https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html.
 */
import { XMLParser } from 'fast-xml-parser';
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { S3Error, S3_ERRORS, type S3ErrorCode } from '../../vocabulary/errors.js';
import { customerKeyHeaders } from '../customer-key.js';
import { UpstreamSigner } from './signer.js';

export interface UpstreamClientOptions {
  /** e.g. http://127.0.0.1:9000 (a path prefix is kept: http://host/prefix). */
  url: string;
  accessKey: string;
  secretKey: string;
  region: string;
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** Most sockets open to the upstream at once (default 256). */
  maxSockets?: number;
  /** Called with the method and seconds of every upstream request (metrics). */
  observe?: (method: string, seconds: number) => void;
}

/**
 * A request body: already on disk (spool.ts), small in memory, or a stream
 * of known length sent upstream as it arrives (see `HoldBack`). A stream
 * whose SHA-256 the client declared up front goes with that value as
 * `x-amz-content-sha256`, so the upstream itself refuses other bytes; one
 * whose SHA-256 is known only at its end goes as `UNSIGNED-PAYLOAD` (AWS S3,
 * Ceph RGW and moto take it over plain HTTP too), and its `md5`, fed every
 * byte that passes, lets the caller check the upstream's ETag against what
 * was sent. A stream can be sent once only.
 */
export type UpstreamBody =
  | { file: string; size: number; sha256: string }
  | { data: Buffer; sha256?: string }
  | { stream: Readable; size: number; sha256?: string; md5?: Hash };

export interface UpstreamRequest {
  method: 'GET' | 'HEAD' | 'PUT' | 'POST' | 'DELETE';
  bucket?: string;
  key?: string;
  /** Query parameters; '' for valueless ones (`?uploads`). */
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: UpstreamBody;
}

export interface UpstreamResponse {
  status: number;
  /** Lowercased names. */
  headers: Record<string, string>;
  /** Must be consumed or destroyed by the caller (see `text()` / `drain()`). */
  body: IncomingMessage;
}

/**
 * The object requests that take an SSE-C key (API_GetObject, HeadObject,
 * PutObject, CreateMultipartUpload, UploadPart, CompleteMultipartUpload,
 * GetObjectAttributes): on the object itself, a part or a version of it —
 * never a delete, a listing or a subresource such as ?tagging or ?acl.
 */
const KEYED_QUERY = new Set(['partNumber', 'uploadId', 'uploads', 'versionId', 'attributes']);
function carriesObjectKey(req: UpstreamRequest): boolean {
  return req.key !== undefined && req.method !== 'DELETE' && Object.keys(req.query ?? {}).every((name) => KEYED_QUERY.has(name));
}

const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

/** RFC 3986 percent-encoding of everything but the unreserved characters. */
export function encodeRfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

const xml = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  trimValues: false,
  isArray: (name) => ['Contents', 'CommonPrefixes', 'Bucket', 'Part', 'Upload'].includes(name),
});

export function parseUpstreamXml(text: string): Record<string, unknown> {
  return xml.parse(text) as Record<string, unknown>;
}

/**
 * The root element's content, whatever its name: upstreams differ (moto
 * answers ListParts with <ListPartsResponse>, AWS with <ListPartsResult>).
 */
export function rootOf<T>(doc: Record<string, unknown>): Partial<T> {
  for (const [name, value] of Object.entries(doc)) if (!name.startsWith('?') && value !== null && typeof value === 'object') return value as Partial<T>;
  return {};
}

/**
 * An upstream that could not be reached, reset the connection or stalled
 * (ECONNREFUSED, ECONNRESET, ETIMEDOUT, ENOTFOUND, our own timeouts...): 503,
 * which every S3 client retries.
 */
export function unreachable(error: Error & { code?: string }): S3Error {
  const unavailable = new S3Error('ServiceUnavailable', { message: `The upstream S3 endpoint is unavailable (${error.code ?? 'no answer'}). Please retry.` });
  // Kept for the log line and the readiness answer, which name the code.
  (unavailable as Error).cause = error;
  return unavailable;
}

/** AWS's answer to a read of an SSE-C object without the right key (ServerSideEncryptionCustomerKeys.html). */
export const SSE_C_KEY_NEEDED = 'The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.';

/** Upstream error codes that are casket's fault, not the client's. */
const CASKET_FAULT = new Set(['SignatureDoesNotMatch', 'InvalidAccessKeyId', 'AuthorizationHeaderMalformed', 'RequestTimeTooSkewed', 'XAmzContentSHA256Mismatch', 'InvalidDigest', 'BadDigest', 'MissingContentLength', 'IncompleteBody', 'ExpiredToken']);

export class UpstreamClient {
  private readonly base: URL;
  private readonly signer: UpstreamSigner;
  private readonly agent: HttpAgent | HttpsAgent;
  private readonly connectTimeoutMs: number;
  private readonly idleTimeoutMs: number;

  constructor(private readonly options: UpstreamClientOptions) {
    this.base = new URL(options.url);
    this.signer = new UpstreamSigner({ accessKeyId: options.accessKey, secretAccessKey: options.secretKey }, options.region);
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 256, maxFreeSockets: 64, scheduling: 'lifo' as const };
    this.agent = this.base.protocol === 'https:' ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  }

  get endpoint(): string {
    return this.base.toString();
  }

  /** Sends one signed request; resolves once the response headers arrived. Network failures reject with a 503 S3Error. */
  async send(req: UpstreamRequest): Promise<UpstreamResponse> {
    const basePath = this.base.pathname.replace(/\/+$/, '');
    let path = basePath + '/';
    if (req.bucket !== undefined) {
      path += encodeRfc3986(req.bucket);
      if (req.key !== undefined) path += '/' + req.key.split('/').map(encodeRfc3986).join('/');
    }
    const query = req.query ?? {};
    const queryString = Object.keys(query)
      .sort()
      .map((k) => `${encodeRfc3986(k)}=${encodeRfc3986(query[k]!)}`)
      .join('&');
    const body = req.body;
    // A stream whose SHA-256 is known only at its end is signed as UNSIGNED-PAYLOAD.
    const sha256 = body === undefined ? EMPTY_SHA256 : 'data' in body ? (body.sha256 ?? createHash('sha256').update(body.data).digest('hex')) : (body.sha256 ?? UNSIGNED_PAYLOAD);
    const length = body === undefined ? 0 : 'data' in body ? body.data.length : body.size;
    const headers: Record<string, string> = {
      ...req.headers,
      // The caller's SSE-C key, on the object requests made while serving it (customer-key.ts).
      ...(carriesObjectKey(req) && customerKeyHeaders()),
      host: this.base.host,
      'x-amz-content-sha256': sha256,
    };
    if (body !== undefined || req.method === 'PUT' || req.method === 'POST') headers['content-length'] = String(length);
    const signedHeaders = this.signer.sign(req.method, path, queryString, headers);
    const started = process.hrtime.bigint();
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const doRequest = this.base.protocol === 'https:' ? httpsRequest : httpRequest;
      const outgoing: ClientRequest = doRequest({
        protocol: this.base.protocol,
        hostname: this.base.hostname,
        port: this.base.port,
        method: req.method,
        path: queryString === '' ? path : `${path}?${queryString}`,
        headers: signedHeaders,
        agent: this.agent,
      });
      let settled = false;
      const fail = (error: Error & { code?: string }) => {
        if (settled) return;
        settled = true;
        outgoing.destroy();
        // A streamed body that failed its own checks (an S3Error from the payload) is the client's error, not the upstream's.
        reject(error instanceof S3Error ? error : unreachable(error));
      };
      outgoing.on('error', fail);
      // Connect timeout: a fresh socket that does not connect in time.
      outgoing.on('socket', (socket) => {
        if ((socket as { connecting?: boolean }).connecting) {
          const timer = setTimeout(() => fail(Object.assign(new Error('connect timeout'), { code: 'UPSTREAM_TIMEOUT' })), this.connectTimeoutMs);
          socket.once('connect', () => clearTimeout(timer));
          socket.once('close', () => clearTimeout(timer));
        }
      });
      // Idle timeout: no byte in either direction for this long.
      outgoing.setTimeout(this.idleTimeoutMs, () => {
        const error = Object.assign(new Error('upstream idle timeout'), { code: 'UPSTREAM_TIMEOUT' });
        if (!settled) fail(error);
        else outgoing.destroy(error);
      });
      let streamed: HoldBack | undefined;
      outgoing.on('response', (res) => {
        settled = true;
        this.options.observe?.(req.method, Number(process.hrtime.bigint() - started) / 1e9);
        if (streamed && !streamed.writableFinished) {
          // Answered before the whole body was sent (an early refusal): stop
          // sending, and retire the socket once the answer is read — half a
          // body must not be taken for the next request.
          streamed.destroy();
          res.once('close', () => outgoing.destroy());
        }
        resolve(res);
      });
      if (body === undefined) outgoing.end();
      else if ('data' in body) outgoing.end(body.data);
      else if ('stream' in body) {
        streamed = new HoldBack(body.size, body.md5);
        const source = body.stream;
        source.once('error', (e) => fail(e));
        streamed.once('error', (e) => fail(e));
        outgoing.once('close', () => {
          if (!streamed!.writableFinished) source.unpipe(streamed);
        });
        source.pipe(streamed).pipe(outgoing);
      } else {
        const file = createReadStream(body.file);
        file.on('error', (e) => fail(e));
        outgoing.once('close', () => file.destroy());
        file.pipe(outgoing);
      }
    });
    return { status: response.statusCode ?? 0, headers: flatHeaders(response), body: response };
  }

  /** Sends and, on a non-2xx status, consumes the error body and throws the mapped S3Error. */
  async ok(req: UpstreamRequest): Promise<UpstreamResponse> {
    const res = await this.send(req);
    if (res.status >= 200 && res.status < 300) return res;
    throw await errorFrom(res, req);
  }

  /** Sends, expects 2xx, reads the XML body. */
  async xml(req: UpstreamRequest): Promise<{ res: UpstreamResponse; doc: Record<string, unknown> }> {
    const res = await this.ok(req);
    return { res, doc: documentOf(await readText(res), req) };
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * Passes a streamed request body on, always keeping its latest chunk back
 * until the source has ENDED — which a verifying Payload does only once
 * every signature, checksum and length check passed. The upstream cannot
 * commit an object whose last bytes it never received, so a body that fails
 * a check (or a client that goes away) leaves nothing behind upstream: the
 * request is destroyed with the last chunk still here. Also refuses to pass
 * more bytes than the Content-Length sent upstream (a keep-alive socket must
 * never carry a byte the upstream would read as the next request).
 *
 * `md5`, when given, is fed each chunk as it passes (the same Buffer, no
 * copy): the MD5 of exactly the bytes sent, once the source ended.
 */
export class HoldBack extends Transform {
  private held: Buffer | undefined;
  private seen = 0;

  constructor(
    private readonly size: number,
    private readonly md5?: Hash,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.size) return callback(new S3Error('IncompleteBody', 'The body is longer than its declared length.'));
    this.md5?.update(chunk);
    const previous = this.held;
    this.held = chunk;
    callback(null, previous);
  }

  override _flush(callback: TransformCallback): void {
    if (this.seen !== this.size) return callback(new S3Error('IncompleteBody', { fields: { ExpectedLength: this.size, ReceivedLength: this.seen } }));
    callback(null, this.held);
  }
}

function flatHeaders(res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(',') : v;
  return out;
}

/** Reads a (small) response body to text; network errors become 503. */
export async function readText(res: UpstreamResponse, limit = 64 * 1024 * 1024): Promise<string> {
  return (await readBytes(res, limit)).toString('utf8');
}

/** A 2xx answer's XML document; one that is an <Error> (CompleteMultipartUpload and copies may answer 200 with one) throws it mapped. */
export function documentOf(text: string, req: UpstreamRequest): Record<string, unknown> {
  const doc = text.trim() === '' ? {} : parseUpstreamXml(text);
  if (doc.Error !== undefined) throw mapError(500, doc.Error as Record<string, unknown>, req);
  return doc;
}

/** Reads a (small) response body; network errors become 503, more than `limit` bytes an InternalError. */
export async function readBytes(res: UpstreamResponse, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        res.body.destroy();
        throw new S3Error('InternalError', 'upstream response too large');
      }
      chunks.push(chunk as Buffer);
    }
  } catch (e) {
    if (e instanceof S3Error) throw e;
    throw unreachable(e as Error);
  }
  return Buffer.concat(chunks, size);
}

/** Consumes and discards a response body (keeps the socket reusable). */
export async function drain(res: UpstreamResponse): Promise<void> {
  try {
    for await (const _ of res.body) void _;
  } catch {
    /* the socket is gone anyway */
  }
}

export async function errorFrom(res: UpstreamResponse, req: UpstreamRequest): Promise<S3Error> {
  if (req.method === 'HEAD') {
    await drain(res);
    return mapError(res.status, {}, req);
  }
  return errorFromText(res.status, await readText(res).catch(() => ''), req);
}

/** The S3Error for an upstream error response whose body was already read. */
export function errorFromText(status: number, text: string, req: UpstreamRequest): S3Error {
  let fields: Record<string, unknown> = {};
  try {
    const doc = text.trim() === '' ? {} : parseUpstreamXml(text);
    fields = (doc.Error as Record<string, unknown> | undefined) ?? {};
  } catch {
    /* not XML */
  }
  return mapError(status, fields, req);
}

function mapError(status: number, fields: Record<string, unknown>, req: UpstreamRequest): S3Error {
  const code = typeof fields.Code === 'string' ? fields.Code : undefined;
  const message = typeof fields.Message === 'string' ? fields.Message : undefined;
  if (status === 503 || code === 'SlowDown') return new S3Error('SlowDown', message ? `upstream: ${message}` : undefined);
  if (status >= 500) return new S3Error('InternalError', `The upstream S3 endpoint failed (${status}${code ? ` ${code}` : ''}). Please retry.`);
  if (code !== undefined && CASKET_FAULT.has(code)) {
    return new S3Error('InternalError', `The upstream refused casket's request (${code}${message ? `: ${message}` : ''}); check --upstream-access-key / --upstream-secret-key / --upstream-region.`);
  }
  const extra: Record<string, string> = {};
  for (const name of ['Key', 'BucketName', 'UploadId', 'PartNumber', 'ETag', 'ProposedSize', 'MinSizeAllowed']) {
    if (typeof fields[name] === 'string') extra[name] = fields[name] as string;
  }
  // A request on an upload (ListParts, UploadPart, Complete, Abort) that is
  // not found names a missing upload, as AWS answers: Ceph RGW 16 says
  // NoSuchKey for ListParts of an unknown or completed upload (measured), and
  // a retried CompleteMultipartUpload must see NoSuchUpload to find its result.
  if (status === 404 && req.query?.uploadId !== undefined && code !== 'NoSuchBucket') return new S3Error('NoSuchUpload', { fields: extra });
  if (code !== undefined && code in S3_ERRORS) return new S3Error(code as S3ErrorCode, { ...(message !== undefined && { message }), fields: extra });
  // A HEAD has no body to say why. An object HEAD refused 400 is, on S3 and
  // Ceph RGW, an SSE-C object read without its key (or with another key):
  // said in AWS's words for the GET, rather than "upstream answered 400".
  if (status === 400 && req.method === 'HEAD' && req.key !== undefined) return new S3Error('InvalidRequest', SSE_C_KEY_NEEDED);
  if (status === 404) {
    if (req.key !== undefined && req.method === 'HEAD') return new S3Error('NoSuchKey');
    return new S3Error(req.key !== undefined ? 'NoSuchKey' : 'NoSuchBucket');
  }
  if (status === 403) return new S3Error('AccessDenied', message ?? 'The upstream denied access.');
  if (status === 412) return new S3Error('PreconditionFailed');
  return new S3Error('InvalidRequest', `upstream answered ${status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}`);
}
