/**
 * A raw SigV4 client for what SDKs will not send: forged payload hashes,
 * hand-made aws-chunked bodies, broken framing, presigned URLs. Signs with
 * @smithy/signature-v4 (an implementation independent of casket's verifier)
 * and sends with node:http, returning status, headers and body as received.
 */
import { Sha256 } from './sha256.js';
import { SignatureV4 } from '@smithy/signature-v4';
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { Cred } from './casket.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export function signer(cred: Cred): SignatureV4 {
  return new SignatureV4({ credentials: cred, region: 'us-east-1', service: 's3', sha256: Sha256 as never, uriEscapePath: false, applyChecksum: false });
}

export function sha256hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

export interface RawRequest {
  method: string;
  /** Path with query, already encoded: '/bucket/key?x=y'. */
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string | Buffer[];
  /** x-amz-content-sha256 to sign; default the real SHA-256 of the body. */
  payloadHash?: string;
  /** Send without signing. */
  unsigned?: boolean;
  signingDate?: Date;
}

export async function signRequest(url: string, cred: Cred, r: RawRequest): Promise<{ headers: Record<string, string>; path: string }> {
  const u = new URL(url);
  const [pathname, query = ''] = r.path.split('?', 2);
  const body = Array.isArray(r.body) ? Buffer.concat(r.body) : (r.body ?? '');
  // A User-Agent as every SDK sends: without one casket shows the '<sha256>-1' ETag form (s3cmd sends none).
  const headers: Record<string, string> = { host: u.host, 'user-agent': 'casket-tests', ...r.headers };
  if (r.body !== undefined && headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) headers['content-length'] = String(body.length);
  if (r.unsigned) return { headers, path: r.path };
  headers['x-amz-content-sha256'] = r.payloadHash ?? sha256hex(body);
  const queryObj: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(query)) {
    const prev = queryObj[k];
    queryObj[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const signed = await signer(cred).sign(
    { method: r.method, protocol: u.protocol, hostname: u.hostname, port: Number(u.port), path: pathname!, query: queryObj, headers },
    { signingDate: r.signingDate ?? new Date() },
  );
  return { headers: signed.headers as Record<string, string>, path: r.path };
}

export async function send(url: string, method: string, path: string, headers: Record<string, string>, body?: Buffer | string | Buffer[]): Promise<RawResponse> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (Array.isArray(body)) for (const b of body) req.write(b);
    else if (body !== undefined) req.write(body);
    req.end();
  });
}

export async function raw(url: string, cred: Cred, r: RawRequest): Promise<RawResponse> {
  const { headers, path } = await signRequest(url, cred, r);
  return send(url, r.method, path, headers, r.body);
}

/** The <Code> of an S3 XML error body. */
export function errorCode(body: string): string | undefined {
  return /<Code>([^<]*)<\/Code>/.exec(body)?.[1];
}

/** The text of the first <name> element, entities decoded (S3 writes ETags as &quot;...&quot;). */
export function xmlField(body: string, name: string): string | undefined {
  const text = new RegExp(`<${name}>([^<]*)</${name}>`).exec(body)?.[1];
  return text?.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}
