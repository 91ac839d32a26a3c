/**
 * Test helpers: @smithy/signature-v4 as an independent signer, and a raw
 * aws-chunked encoder for crafting bodies SDKs will not send.
 */
import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Credential } from '../../src/auth/credentials.js';
import { signedRequestFromNode, signingKeyFor, type ChunkSigning, type SignedRequest } from '../../src/auth/sigv4.js';
import { S3Error, type S3ErrorCode } from '../../src/vocabulary/errors.js';
import { expect } from 'vitest';

/** A SHA-256 / HMAC-SHA256 constructor in the shape smithy expects. */
export class Sha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    if (secret === undefined) this.hash = createHash('sha256');
    else if (typeof secret === 'string') this.hash = createHmac('sha256', Buffer.from(secret, 'utf8'));
    else if (ArrayBuffer.isView(secret)) this.hash = createHmac('sha256', Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength));
    else this.hash = createHmac('sha256', Buffer.from(secret));
  }
  update(data: string | Uint8Array): void {
    this.hash.update(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {}
}

export const ALICE: Credential = { accessKeyId: 'AKIDALICE', secretAccessKey: 'alice/secret+key=with spaces', agent: 'alice' };
export const BOB: Credential = { accessKeyId: 'AKIDBOB', secretAccessKey: 'bob-secret' };
export const lookup = (id: string): Credential | undefined => [ALICE, BOB].find((c) => c.accessKeyId === id);

export function signer(credential: Credential, region = 'us-east-1'): SignatureV4 {
  return new SignatureV4({
    credentials: { accessKeyId: credential.accessKeyId, secretAccessKey: credential.secretAccessKey },
    region,
    service: 's3',
    sha256: Sha256,
    // S3 signs the path as sent, encoded once (the SDK encodes keys before signing).
    uriEscapePath: false,
  });
}

/** RFC 3986 strict encoding of a UTF-8 string, as the SDKs encode keys and query values. */
export function strictEncode(text: string, keepSlash = false): string {
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === '/')) out += c;
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

export interface ToSign {
  method?: string;
  /** Already encoded, as on the wire. */
  path: string;
  /** Decoded query, as smithy takes it. */
  query?: Record<string, string>;
  headers?: Record<string, string>;
  host?: string;
}

export function toQueryString(query: Record<string, string | string[] | null | undefined>): string {
  return Object.entries(query)
    .flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x] as const) : [[k, v ?? ''] as const]))
    .map(([k, v]) => `${strictEncode(k)}=${strictEncode(v)}`)
    .join('&');
}

/** Signs with smithy and returns what casket would receive. */
export async function signHeader(
  credential: Credential,
  input: ToSign,
  options: { signingDate?: Date; region?: string; unsignableHeaders?: Set<string> } = {},
): Promise<SignedRequest> {
  const host = input.host ?? 'casket.test:9000';
  const headers: Record<string, string> = { host, ...(input.headers ?? {}) };
  if (!Object.keys(headers).some((h) => h.toLowerCase() === 'x-amz-content-sha256')) {
    headers['x-amz-content-sha256'] = createHash('sha256').update('').digest('hex');
  }
  const signed = await signer(credential, options.region).sign(
    { method: input.method ?? 'GET', protocol: 'http:', hostname: host, path: input.path, query: input.query ?? {}, headers },
    {
      ...(options.signingDate ? { signingDate: options.signingDate } : {}),
      ...(options.unsignableHeaders ? { unsignableHeaders: options.unsignableHeaders } : {}),
    },
  );
  const rawHeaders = Object.entries(signed.headers as Record<string, string>).flat();
  const qs = toQueryString(signed.query ?? {});
  return signedRequestFromNode(signed.method, qs ? `${signed.path}?${qs}` : signed.path, rawHeaders);
}

/** Presigns with smithy and returns what casket would receive. */
export async function presign(
  credential: Credential,
  input: ToSign,
  options: { signingDate?: Date; expiresIn?: number } = {},
): Promise<SignedRequest> {
  const host = input.host ?? 'casket.test:9000';
  // As @aws-sdk/s3-request-presigner does: the payload is declared unsigned
  // (smithy would otherwise sign the empty-body hash); smithy hoists it into the query.
  const headers = { host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', ...(input.headers ?? {}) };
  const signed = await signer(credential).presign(
    { method: input.method ?? 'GET', protocol: 'http:', hostname: host, path: input.path, query: input.query ?? {}, headers },
    { expiresIn: options.expiresIn ?? 3600, ...(options.signingDate ? { signingDate: options.signingDate } : {}) },
  );
  const rawHeaders = Object.entries(signed.headers as Record<string, string>).flat();
  const qs = toQueryString(signed.query ?? {});
  return signedRequestFromNode(signed.method, `${signed.path}?${qs}`, rawHeaders);
}

/** Encodes data as aws-chunked; `sign` yields each chunk's signature line part when signing. */
export function encodeChunked(
  data: Buffer,
  chunkSize: number,
  options: { signatureFor?: (chunk: Buffer) => string; trailers?: string; finalLine?: boolean } = {},
): Buffer {
  const parts: Buffer[] = [];
  const emit = (chunk: Buffer): void => {
    const ext = options.signatureFor ? `;chunk-signature=${options.signatureFor(chunk)}` : '';
    parts.push(Buffer.from(`${chunk.length.toString(16)}${ext}\r\n`), chunk, Buffer.from(chunk.length ? '\r\n' : ''));
  };
  for (let off = 0; off < data.length; off += chunkSize) emit(data.subarray(off, off + chunkSize));
  emit(Buffer.alloc(0));
  if (options.trailers) parts.push(Buffer.from(options.trailers));
  if (options.finalLine !== false) parts.push(Buffer.from('\r\n'));
  return Buffer.concat(parts);
}

/** A chunk signer following the AWS streaming spec, for crafting signed bodies. */
export function chunkSigner(signingKey: Buffer, amzDate: string, scope: string, seed: string) {
  let previous = seed;
  const empty = createHash('sha256').update('').digest('hex');
  return {
    chunk(data: Buffer): string {
      const sts = ['AWS4-HMAC-SHA256-PAYLOAD', amzDate, scope, previous, empty, createHash('sha256').update(data).digest('hex')].join('\n');
      previous = createHmac('sha256', signingKey).update(sts).digest('hex');
      return previous;
    },
    trailer(lines: string): string {
      const sts = ['AWS4-HMAC-SHA256-TRAILER', amzDate, scope, previous, createHash('sha256').update(lines).digest('hex')].join('\n');
      return createHmac('sha256', signingKey).update(sts).digest('hex');
    },
  };
}

/** Runs `fn`, which must throw an S3Error with this code (and message); returns it. */
export function expectS3Error(fn: () => unknown, code: S3ErrorCode, message?: string | RegExp): S3Error {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(S3Error);
    const err = e as S3Error;
    expect(err.code).toBe(code);
    if (message !== undefined) expect(err.message).toMatch(message);
    return err;
  }
  throw new Error(`expected S3Error ${code}, nothing was thrown`);
}

/** SigV2 fixtures: a request's Date, and the signature of a string to sign (HMAC-SHA1, base64; the AWS page "Signing and authenticating REST requests"). */
export const SIGV2_NOW = new Date('2026-03-01T12:00:00Z');
export const sigv2Date = SIGV2_NOW.toUTCString();
export function sigv2Sign(stringToSign: string, secret = ALICE.secretAccessKey): string {
  return createHmac('sha1', secret).update(Buffer.from(stringToSign, 'utf8')).digest('base64');
}
/** A V2 header-signed request to 127.0.0.1 (path style) whose signature is over `stringToSign`. */
export function sigv2Signed(stringToSign: string, over: Partial<SignedRequest> & { headers?: Record<string, string> } = {}): SignedRequest {
  return {
    method: 'GET',
    rawPath: '/b/k',
    rawQuery: '',
    ...over,
    headers: { host: '127.0.0.1', date: sigv2Date, authorization: `AWS ${ALICE.accessKeyId}:${sigv2Sign(stringToSign)}`, ...over.headers },
  };
}

/** Chunk-signing parameters of a fixed request (secret "secret", 2026-03-01), with its seed signature. */
export function chunkSigningFor(seedSignature: string): ChunkSigning {
  return {
    signingKey: signingKeyFor('secret', '20260301', 'us-east-1', 's3'),
    amzDate: '20260301T120000Z',
    scope: '20260301/us-east-1/s3/aws4_request',
    seedSignature,
  };
}
