/**
 * casket's upstream signer (src/backends/s3/signer.ts) against the AWS SDK's
 * own, @smithy/signature-v4, configured as S3 signs (uriEscapePath: false):
 * the same request at the same instant must carry the same Authorization.
 * Requests are drawn from what casket sends upstream — object paths with
 * encoded keys, sub-resource queries, conditional and metadata headers with
 * folded white space — and the date crosses a day, so the cached signing key
 * and date string are exercised too.
 */
import { SignatureV4 } from '@smithy/signature-v4';
import type { SourceData } from '@smithy/types';
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encodeRfc3986 } from '../../../src/backends/s3/client.js';
import { UpstreamSigner } from '../../../src/backends/s3/signer.js';

const credentials = { accessKeyId: 'AKIDUPSTREAM', secretAccessKey: 'upstream/secret+key=' };

class Sha256 {
  private hash;
  constructor(secret?: SourceData) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', typeof secret === 'string' ? Buffer.from(secret) : Buffer.from(secret as Uint8Array));
  }
  update(data: Uint8Array | string): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {}
}

interface Case {
  method: string;
  key?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
}

const cases: Case[] = [
  { method: 'GET', key: 'notes.md' },
  { method: 'PUT', key: 'dir/sub dir/ü+é (1).txt', headers: { 'if-match': '"0123abcd"', 'x-amz-meta-casket-sha256': 'ab'.repeat(32), 'content-type': 'text/plain' } },
  { method: 'PUT', key: 'k', query: { partNumber: '3', uploadId: 'a/b+c=' }, headers: { 'content-md5': 'XrY7u+Ae7tCTyyK7j1rNww==' } },
  { method: 'POST', key: 'k', query: { uploads: '' } },
  { method: 'GET', query: { 'list-type': '2', prefix: 'a b/', delimiter: '/', 'continuation-token': 'x~y*z' } },
  { method: 'DELETE', key: "it's (here)!", headers: { 'if-none-match': '*', 'x-amz-meta-note': '  two   spaces\tand tab  ' } },
  { method: 'HEAD', key: 'a/b/c', headers: { 'user-agent': 'not signed', expect: '100-continue', 'x-amz-meta-line': 'a\r\nb' } },
];

function requestOf(c: Case, host: string) {
  const path = '/bucket' + (c.key === undefined ? '' : '/' + c.key.split('/').map(encodeRfc3986).join('/'));
  const query = c.query ?? {};
  const canonicalQuery = Object.keys(query)
    .sort()
    .map((k) => `${encodeRfc3986(k)}=${encodeRfc3986(query[k]!)}`)
    .join('&');
  const headers = { ...c.headers, host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'content-length': '0' };
  return { path, query, canonicalQuery, headers };
}

describe('upstream signer', () => {
  const smithy = new SignatureV4({ credentials, region: 'eu-west-3', service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false });
  const ours = new UpstreamSigner(credentials, 'eu-west-3');

  for (const instant of ['2026-11-23T23:59:59Z', '2026-11-24T00:00:00Z', '2026-11-24T00:00:00.999Z', '2026-11-24T13:07:41Z']) {
    it(`signs as @smithy/signature-v4 does, at ${instant}`, async () => {
      const now = new Date(instant);
      for (const c of cases) {
        const r = requestOf(c, '127.0.0.1:18080');
        const reference = await smithy.sign({ method: c.method, protocol: 'http:', hostname: '127.0.0.1', port: 18080, path: r.path, query: r.query, headers: { ...r.headers } }, { signingDate: now });
        const signed = ours.sign(c.method, r.path, r.canonicalQuery, r.headers, now.getTime());
        expect(signed['x-amz-date'], `${c.method} ${r.path}`).toBe(reference.headers['x-amz-date']);
        expect(signed.authorization, `${c.method} ${r.path}`).toBe(reference.headers.authorization);
      }
    });
  }

  it('a wrong secret gives another signature (the comparison can fail)', () => {
    const r = requestOf(cases[1]!, '127.0.0.1:18080');
    const other = new UpstreamSigner({ ...credentials, secretAccessKey: 'other' }, 'eu-west-3');
    expect(other.sign('PUT', r.path, r.canonicalQuery, r.headers, 0).authorization).not.toBe(ours.sign('PUT', r.path, r.canonicalQuery, r.headers, 0).authorization);
  });
});
