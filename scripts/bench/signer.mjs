/**
 * SigV4 for the load generator (AWS "Signature Version 4 signing process",
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html).
 *
 * Two signers with one interface, `sign(method, path, headers) → headers`:
 * - `fastSigner`: the canonical request built by hand over node:crypto, the
 *   signing key derived once per (secret, day) and cached, the x-amz-date
 *   string cached per second. About 5 µs a request, so on a 2-core machine the
 *   load generator does not eat the CPU the server under test needs.
 * - `smithySigner`: @smithy/signature-v4 (the AWS SDK's own signer, with its
 *   own signing-key cache) for every request; slower, used with `--signer smithy`.
 * `checkFastSigner` signs sample requests with both and refuses to run when
 * they differ, so the fast path is the reference implementation, precomputed.
 *
 * Paths must already be URI-encoded (keys used here are [A-Za-z0-9._/-]);
 * S3 does not double-encode the path (uriEscapePath: false).
 */
import { SignatureV4 } from '@smithy/signature-v4';
import { createHash, createHmac } from 'node:crypto';

const REGION = 'us-east-1';
const SERVICE = 's3';

/** node:crypto in the constructor shape @smithy/signature-v4 expects. */
class Sha256 {
  constructor(secret) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret);
  }
  update(data) {
    this.hash.update(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  }
  async digest() {
    return new Uint8Array(this.hash.digest());
  }
  reset() {}
}

export function sha256hex(data) {
  return createHash('sha256').update(data).digest('hex');
}

function hmac(key, data) {
  return createHmac('sha256', key).update(data).digest();
}

function amzDate(ms) {
  // 20250101T000000Z
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

function canonicalQuery(query) {
  if (!query) return '';
  const pairs = [];
  for (const [k, v] of new URLSearchParams(query)) pairs.push([encodeRfc3986(k), encodeRfc3986(v)]);
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

function encodeRfc3986(s) {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * @param cred {accessKeyId, secretAccessKey}
 * Signs every header passed in `headers` (lowercase names), as smithy does.
 */
export function fastSigner(cred) {
  let keyDay = '';
  let key;
  let dateSecond = -1;
  let dateString = '';
  return {
    name: 'fast',
    sign(method, path, headers, nowMs = Date.now()) {
      const second = Math.floor(nowMs / 1000);
      if (second !== dateSecond) {
        dateSecond = second;
        dateString = amzDate(second * 1000);
      }
      const day = dateString.slice(0, 8);
      if (day !== keyDay) {
        keyDay = day;
        key = hmac(hmac(hmac(hmac(`AWS4${cred.secretAccessKey}`, day), REGION), SERVICE), 'aws4_request');
      }
      const out = { ...headers, 'x-amz-date': dateString };
      const names = Object.keys(out).sort();
      let canonicalHeaders = '';
      for (const n of names) canonicalHeaders += `${n}:${String(out[n]).trim().replace(/\s+/g, ' ')}\n`;
      const signedHeaders = names.join(';');
      const q = path.indexOf('?');
      const pathname = q < 0 ? path : path.slice(0, q);
      const query = q < 0 ? '' : path.slice(q + 1);
      const canonicalRequest = `${method}\n${pathname}\n${canonicalQuery(query)}\n${canonicalHeaders}\n${signedHeaders}\n${out['x-amz-content-sha256']}`;
      const scope = `${day}/${REGION}/${SERVICE}/aws4_request`;
      const stringToSign = `AWS4-HMAC-SHA256\n${dateString}\n${scope}\n${sha256hex(canonicalRequest)}`;
      const signature = createHmac('sha256', key).update(stringToSign).digest('hex');
      out.authorization = `AWS4-HMAC-SHA256 Credential=${cred.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
      return out;
    },
  };
}

function smithy(cred) {
  return new SignatureV4({ credentials: cred, region: REGION, service: SERVICE, sha256: Sha256, uriEscapePath: false, applyChecksum: false });
}

async function smithySign(signer, method, path, headers, nowMs) {
  const q = path.indexOf('?');
  const pathname = q < 0 ? path : path.slice(0, q);
  const query = {};
  if (q >= 0) for (const [k, v] of new URLSearchParams(path.slice(q + 1))) query[k] = v;
  const [hostname, port] = headers.host.split(':');
  const signed = await signer.sign(
    { method, protocol: 'http:', hostname, port: Number(port), path: pathname, query, headers: { ...headers } },
    { signingDate: new Date(nowMs) },
  );
  return signed.headers;
}

/** @smithy/signature-v4 on every request (async; its own signing-key cache). */
export function smithySigner(cred) {
  const signer = smithy(cred);
  return { name: 'smithy', sign: (method, path, headers, nowMs = Date.now()) => smithySign(signer, method, path, headers, nowMs) };
}

/** Throws unless the fast signer and @smithy/signature-v4 produce the same Authorization. */
export async function checkFastSigner() {
  const cred = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
  const fast = fastSigner(cred);
  const ref = smithy(cred);
  const now = Date.now();
  const samples = [
    ['PUT', '/bucket/put/4k/w0', { host: '127.0.0.1:9000', 'x-amz-content-sha256': sha256hex('x'), 'if-match': '"abc"' }],
    ['GET', '/bucket/a/b.txt', { host: '127.0.0.1:1234', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' }],
    ['GET', '/bucket?list-type=2&prefix=a%2Fb&max-keys=10', { host: 'localhost:80', 'x-amz-content-sha256': sha256hex('') }],
  ];
  for (const [method, path, headers] of samples) {
    const a = fast.sign(method, path, headers, now).authorization;
    const b = (await smithySign(ref, method, path, headers, now)).authorization;
    if (a !== b) throw new Error(`fast signer disagrees with @smithy/signature-v4 on ${method} ${path}:\n  ${a}\n  ${b}`);
  }
}
