/**
 * Which conditional writes the upstream enforces itself, learnt by a probe on
 * a scratch key in a scratch bucket (or given by configuration).
 *
 * AWS S3 documents conditional writes on PutObject and CompleteMultipartUpload
 * (If-None-Match, If-Match:
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html)
 * and on DeleteObject (If-Match). Other implementations differ, measured on
 * these machines:
 *   - Ceph RGW 16: matches If-Match only UNQUOTED (a quoted ETag never
 *     matches), answers 412 (not 404) for If-Match on a missing key, ignores
 *     If-Match on DeleteObject and every condition on CompleteMultipartUpload.
 *   - moto 5: ignores If-Match on CompleteMultipartUpload and on copy
 *     destinations.
 *   - MinIO: ignores conditional deletes.
 * CopyObject: AWS enforces x-amz-copy-source-if-match
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html) and,
 * since 2025-10, If-Match / If-None-Match on the destination, as MinIO does.
 * Measured here (issue 42): moto 5.2 copies whatever x-amz-copy-source-if-match,
 * If-Match or If-None-Match: * say (200, destination replaced); Ceph RGW 16
 * does the same, and pins the source only under its own older name
 * x-amz-copy-if-match (412), which no other S3 implementation reads.
 * Hence a probe instead of a vendor table: for each operation it checks both
 * that a wrong ETag is refused (412) and that the right one (quoted, else
 * unquoted) goes through. An unreachable or read-only upstream yields the
 * conservative answer (nothing enforced), and the backend then serializes
 * in-process, or refuses when replicas share the upstream.
 */
import { createHash, randomBytes } from 'node:crypto';
import { drain, encodeRfc3986, readText, parseUpstreamXml, rootOf, type UpstreamClient, type UpstreamResponse } from './client.js';

export type ETagForm = 'quoted' | 'unquoted';

export interface Capabilities {
  /** If-Match on PutObject: enforced, and the form of ETag it matches; false: ignored. */
  ifMatchPut: ETagForm | false;
  /** If-None-Match: * on PutObject. */
  ifNoneMatchPut: boolean;
  /** If-Match on DeleteObject (in the form of ifMatchPut, or quoted). */
  ifMatchDelete: boolean;
  /** If-Match on CompleteMultipartUpload. */
  ifMatchComplete: boolean;
  /** If-None-Match: * on CompleteMultipartUpload. */
  ifNoneMatchComplete: boolean;
  /**
   * SSE-C honoured: a PutObject with a customer key is answered with the key's
   * algorithm, and a GET of it without the key is refused (moto 5 stores the
   * bytes in plaintext and serves them to anyone; Ceph RGW 16 refuses the key
   * over plain HTTP unless rgw_crypt_require_ssl is false). Absent: unknown, not honoured.
   */
  customerKeys?: boolean;
  /** x-amz-copy-source-if-match on CopyObject: a wrong source ETag refused, nothing copied. */
  copySourceIfMatch: boolean;
  /** If-Match on CopyObject's destination (in the form of ifMatchPut, or quoted): a wrong ETag refused, nothing copied. */
  ifMatchCopy: boolean;
  /** If-None-Match: * on CopyObject's destination: an existing key refused, nothing copied. */
  ifNoneMatchCopy: boolean;
}

export const NOTHING_ENFORCED: Capabilities = { ifMatchPut: false, ifNoneMatchPut: false, ifMatchDelete: false, ifMatchComplete: false, ifNoneMatchComplete: false, copySourceIfMatch: false, ifMatchCopy: false, ifNoneMatchCopy: false };

export interface ProbeResult {
  capabilities: Capabilities;
  /** Where the probe ran, or why it could not. */
  note: string;
}

export function unquote(etag: string): string {
  // Read by character, not by pattern: a listing unquotes each of its 1,000 ETags (4.5% of its CPU with two patterns, --cpu-prof).
  let v = etag.trim();
  if (v.startsWith('W/')) v = v.slice(2);
  return v.length >= 2 && v.charCodeAt(0) === 0x22 && v.charCodeAt(v.length - 1) === 0x22 ? v.slice(1, -1) : v;
}

export function formatFor(form: ETagForm | false, etag: string): string {
  return form === 'unquoted' ? etag : `"${etag}"`;
}

const BOGUS = 'f'.repeat(32);

function refused(status: number): boolean {
  return status === 412 || status === 409;
}

async function status(res: UpstreamResponse): Promise<number> {
  await drain(res);
  return res.status;
}

export async function probeCapabilities(client: UpstreamClient): Promise<ProbeResult> {
  const scratch = `casket-probe-${randomBytes(6).toString('hex')}`;
  let bucket = scratch;
  let ownBucket = true;
  const created = await client.send({ method: 'PUT', bucket: scratch });
  if ((await status(created)) >= 300) {
    // No right to create buckets: use a scratch key in a bucket that exists.
    ownBucket = false;
    const list = await client.send({ method: 'GET' });
    const text = await readText(list);
    const buckets = list.status < 300 ? (rootOf<{ Buckets?: { Bucket?: Array<{ Name?: string }> } }>(parseUpstreamXml(text)).Buckets?.Bucket ?? []) : [];
    const first = buckets[0]?.Name;
    if (!first) return { capabilities: NOTHING_ENFORCED, note: `could not create a scratch bucket (HTTP ${created.status}) and no bucket to probe in: assuming no conditional writes are enforced` };
    bucket = first;
  }
  const key = `.casket-probe/${randomBytes(8).toString('hex')}`;
  const put = async (body: string, headers: Record<string, string> = {}) => {
    const res = await client.send({ method: 'PUT', bucket, key, headers, body: { data: Buffer.from(body) } });
    await drain(res);
    return { status: res.status, etag: unquote(res.headers.etag ?? '') };
  };
  const exists = async () => (await status(await client.send({ method: 'HEAD', bucket, key }))) === 200;
  const uploads: string[] = [];
  const complete = async (headers: Record<string, string>) => {
    const created = await client.xml({ method: 'POST', bucket, key, query: { uploads: '' } });
    const uploadId = String(rootOf<{ UploadId?: string }>(created.doc).UploadId ?? '');
    uploads.push(uploadId);
    const part = await client.ok({ method: 'PUT', bucket, key, query: { partNumber: '1', uploadId }, body: { data: Buffer.from('part') } });
    await drain(part);
    const body = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${part.headers.etag ?? ''}</ETag></Part></CompleteMultipartUpload>`;
    const res = await client.send({ method: 'POST', bucket, key, query: { uploadId }, headers: { ...headers, 'content-type': 'application/xml' }, body: { data: Buffer.from(body) } });
    const text = await readText(res);
    // A 200 whose body is an <Error> is a refusal too.
    const refusedInBody = res.status < 300 && /<Error>[\s\S]*<Code>(PreconditionFailed|ConditionalRequestConflict)<\/Code>/.test(text);
    return refusedInBody ? 412 : res.status;
  };

  const source = `${key}-copy-source`;
  const copySource = `${bucket}/${source.split('/').map(encodeRfc3986).join('/')}`;
  const headETag = async () => {
    const res = await client.send({ method: 'HEAD', bucket, key });
    await drain(res);
    return res.status === 200 ? unquote(res.headers.etag ?? '') : undefined;
  };
  const copy = async (headers: Record<string, string>) => {
    const res = await client.send({ method: 'PUT', bucket, key, headers: { 'x-amz-copy-source': copySource, ...headers } });
    const text = await readText(res);
    // CopyObject may answer 200 and an <Error> body (API_CopyObject): a refusal too.
    return res.status < 300 && /<Error>[\s\S]*<Code>(PreconditionFailed|ConditionalRequestConflict)<\/Code>/.test(text) ? 412 : res.status;
  };

  const caps: Capabilities = { ...NOTHING_ENFORCED };
  try {
    let current = (await put('a')).etag;
    // If-None-Match: * on an existing key.
    const inm = await put('b', { 'if-none-match': '*' });
    caps.ifNoneMatchPut = refused(inm.status);
    if (!caps.ifNoneMatchPut) current = (await put('a')).etag;
    // If-Match: a wrong ETag must be refused, the right one accepted (quoted, else unquoted).
    const wrong = await put('c', { 'if-match': `"${BOGUS}"` });
    if (refused(wrong.status) || wrong.status === 404) {
      for (const form of ['quoted', 'unquoted'] as const) {
        const right = await put('c', { 'if-match': formatFor(form, current) });
        if (right.status < 300) {
          caps.ifMatchPut = form;
          current = right.etag;
          break;
        }
      }
    } else {
      current = (await put('a')).etag;
    }
    const form: ETagForm = caps.ifMatchPut || 'quoted';
    // If-Match on DeleteObject.
    const wrongDelete = await status(await client.send({ method: 'DELETE', bucket, key, headers: { 'if-match': formatFor(form, BOGUS) } }));
    if (refused(wrongDelete) && (await exists())) {
      const rightDelete = await status(await client.send({ method: 'DELETE', bucket, key, headers: { 'if-match': formatFor(form, current) } }));
      caps.ifMatchDelete = rightDelete < 300 && !(await exists());
    }
    current = (await put('a')).etag;
    // Conditions on CompleteMultipartUpload (the key exists).
    if (refused(await complete({ 'if-match': formatFor(form, BOGUS) }))) {
      caps.ifMatchComplete = (await complete({ 'if-match': formatFor(form, current) })) < 300;
    }
    await put('a');
    caps.ifNoneMatchComplete = refused(await complete({ 'if-none-match': '*' }));
    caps.customerKeys = await honoursCustomerKeys(client, bucket, `${key}-sse-c`);
    // CopyObject: each condition must be refused when wrong AND copy nothing,
    // and (If-Match kinds) copy when right.
    const written = await client.ok({ method: 'PUT', bucket, key: source, body: { data: Buffer.from('copy source') } });
    await drain(written);
    const sourceETag = unquote(written.headers.etag ?? '');
    current = (await put('a')).etag;
    if (refused(await copy({ 'x-amz-copy-source-if-match': `"${BOGUS}"` })) && (await headETag()) === current) {
      caps.copySourceIfMatch = (await copy({ 'x-amz-copy-source-if-match': `"${sourceETag}"` })) < 300 && (await headETag()) === sourceETag;
    }
    current = (await put('a')).etag;
    if (refused(await copy({ 'if-match': formatFor(form, BOGUS) })) && (await headETag()) === current) {
      caps.ifMatchCopy = (await copy({ 'if-match': formatFor(form, current) })) < 300 && (await headETag()) === sourceETag;
    }
    current = (await put('a')).etag;
    caps.ifNoneMatchCopy = refused(await copy({ 'if-none-match': '*' })) && (await headETag()) === current;
    return { capabilities: caps, note: ownBucket ? `probed in scratch bucket ${bucket}` : `probed on scratch key ${key} in bucket ${bucket}` };
  } finally {
    const quietly = (req: Parameters<UpstreamClient['send']>[0]) => client.send(req).then(drain, () => {});
    for (const uploadId of uploads) await quietly({ method: 'DELETE', bucket, key, query: { uploadId } });
    await quietly({ method: 'DELETE', bucket, key });
    await quietly({ method: 'DELETE', bucket, key: `${key}-sse-c` });
    await quietly({ method: 'DELETE', bucket, key: source });
    if (ownBucket) await quietly({ method: 'DELETE', bucket });
  }
}

/** The SSE-C probe (Capabilities.customerKeys), with a throwaway key on a scratch key. */
async function honoursCustomerKeys(client: UpstreamClient, bucket: string, key: string): Promise<boolean> {
  const secret = randomBytes(32);
  const headers = {
    'x-amz-server-side-encryption-customer-algorithm': 'AES256',
    'x-amz-server-side-encryption-customer-key': secret.toString('base64'),
    'x-amz-server-side-encryption-customer-key-md5': createHash('md5').update(secret).digest('base64'),
  };
  const put = await client.send({ method: 'PUT', bucket, key, headers, body: { data: Buffer.from('sse-c') } });
  await drain(put);
  if (put.status >= 300 || put.headers['x-amz-server-side-encryption-customer-algorithm'] !== 'AES256') return false;
  const keyless = await client.send({ method: 'GET', bucket, key });
  await drain(keyless);
  return keyless.status >= 400;
}
