/**
 * SigV4 for services other than S3 (casket's STS endpoint, src/sts): the
 * credential scope must name the expected service, and a body that carries no
 * x-amz-content-sha256 is verified against the hash of what was read.
 */
import { createHash } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { verifySigV4 } from '../../src/auth/sigv4.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { BOB, lookup, Sha256 } from './helpers.js';

const body = 'Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Acasket%3Aiam%3A%3Aagent%2Falice&RoleSessionName=run';
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** Signed as the SDK's STS client signs: no x-amz-content-sha256 header, the body's hash in the canonical request. */
async function stsRequest(service = 'sts', text = body, applyChecksum = false) {
  const signer = new SignatureV4({ credentials: BOB, region: 'us-east-1', service, sha256: Sha256, applyChecksum });
  const signed = await signer.sign({ method: 'POST', protocol: 'http:', hostname: '127.0.0.1', port: 9000, path: '/', headers: { host: '127.0.0.1:9000', 'content-type': 'application/x-www-form-urlencoded' }, body: text });
  const headers = Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
  return { method: 'POST', rawPath: '/', rawQuery: '', headers };
}

function code(run: () => unknown): string {
  try {
    run();
    return 'ok';
  } catch (e) {
    return e instanceof S3Error ? e.code : String(e);
  }
}

describe('verifySigV4 with a service and a body hash', () => {
  it('verifies an STS request signed over its body, as the STS clients sign it', async () => {
    const req = await stsRequest();
    expect(req.headers['x-amz-content-sha256']).toBeUndefined();
    expect(verifySigV4(req, lookup, new Date(), { service: 'sts', payloadSha256: sha(body) })?.credential.accessKeyId).toBe(BOB.accessKeyId);
  });

  it('refuses another body than the one signed', async () => {
    const req = await stsRequest();
    expect(code(() => verifySigV4(req, lookup, new Date(), { service: 'sts', payloadSha256: sha(`${body}&DurationSeconds=43200`) }))).toBe('SignatureDoesNotMatch');
    // With the hash in a header too, the header must be the body's.
    const withHeader = await stsRequest('sts', body, true);
    expect(withHeader.headers['x-amz-content-sha256']).toBe(sha(body));
    expect(code(() => verifySigV4(withHeader, lookup, new Date(), { service: 'sts', payloadSha256: sha(body) }))).toBe('ok');
    expect(code(() => verifySigV4(withHeader, lookup, new Date(), { service: 'sts', payloadSha256: sha('other') }))).toBe('XAmzContentSHA256Mismatch');
  });

  it('refuses a scope for another service, either way round', async () => {
    const s3Signed = await stsRequest('s3');
    expect(code(() => verifySigV4(s3Signed, lookup, new Date(), { service: 'sts', payloadSha256: sha(body) }))).toBe('AuthorizationHeaderMalformed');
    const stsSigned = await stsRequest('sts', body, true);
    expect(code(() => verifySigV4(stsSigned, lookup))).toBe('AuthorizationHeaderMalformed');
  });
});
