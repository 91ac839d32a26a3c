/**
 * Server-side encryption request headers: honoured or refused, never dropped
 * (issue 44). casket does not carry them yet, on either backend, so a request
 * asking for encryption is refused with the error AWS gives, before anything
 * is read or written — a client that asked for its own key must never be
 * answered 200 with its bytes stored in plaintext.
 *
 * - SSE-C (`x-amz-server-side-encryption-customer-*`, and the
 *   `x-amz-copy-source-server-side-encryption-customer-*` source keys of a
 *   copy): over plain HTTP, 400 InvalidRequest with AWS's own sentence
 *   (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ServerSideEncryptionCustomerKeys.html),
 *   on every backend. Over TLS, in front of an upstream that honours them
 *   (probed: backends/s3/capabilities.ts), the keys go up with every object
 *   request casket makes while serving this one and no other
 *   (backends/customer-key.ts), and the answer's algorithm and key MD5 come
 *   back; the upstream encrypts, and refuses a read without the right key.
 *   Otherwise 501 NotImplemented, saying why: the embedded store does not
 *   encrypt, moto stores the bytes in plaintext, an upstream reached over
 *   plain HTTP off this machine would see the key in the clear.
 * - SSE-KMS (`x-amz-server-side-encryption: aws:kms` / `aws:kms:dsse`, key id,
 *   context, bucket key) and SSE-S3 (`AES256`): in front of an upstream they
 *   go up with PutObject, CreateMultipartUpload and CopyObject and its answer
 *   headers come back (the upstream encrypts and decrypts; casket's own reads
 *   need no key). On the embedded store, 501 NotImplemented: it does not
 *   encrypt at rest, so echoing `AES256` would be a lie.
 */
import { createHash } from 'node:crypto';
import { COPY_SOURCE_KEY_HEADERS, CUSTOMER_KEY_HEADERS, type CustomerKey, type CustomerKeys } from '../backends/customer-key.js';
import type { Backend } from '../backends/types.js';
import { S3Error } from '../vocabulary/errors.js';

const SSE = 'x-amz-server-side-encryption';
const SSE_C_PREFIXES = ['x-amz-server-side-encryption-customer-', 'x-amz-copy-source-server-side-encryption-customer-'];

/** AWS's sentence for SSE-C over plain HTTP (ServerSideEncryptionCustomerKeys.html). */
export const SSE_C_NEEDS_TLS = 'Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.';

/** The operations that take SSE-S3 / SSE-KMS request headers (API_PutObject, API_CopyObject, API_CreateMultipartUpload). */
const ENCRYPTING = new Set(['PutObject', 'CopyObject', 'CreateMultipartUpload']);

/** The values S3 accepts for x-amz-server-side-encryption (API_PutObject.html). */
const METHODS = new Set(['AES256', 'aws:kms', 'aws:kms:dsse']);

/**
 * The SSE-C keys a request carries, once judged (undefined: none), or the S3
 * error for encryption casket cannot carry. `secure`: it came over TLS.
 */
export async function encryptionKeys(headers: Record<string, string>, secure: boolean, backend: Backend, operation?: string): Promise<CustomerKeys | undefined> {
  const upstream = backend.forward !== undefined;
  const names = Object.keys(headers).filter((name) => name.startsWith(SSE) || SSE_C_PREFIXES.some((p) => name.startsWith(p)));
  if (names.length === 0) return undefined;
  const customer = names.filter((name) => SSE_C_PREFIXES.some((p) => name.startsWith(p)));
  if (customer.length > 0) {
    if (!secure) throw new S3Error('InvalidRequest', SSE_C_NEEDS_TLS);
    const refusal = backend.customerKeysRefusal ? await backend.customerKeysRefusal() : 'casket reads objects itself (copies, pre-images, diffs, merges) and would need to keep your key';
    if (refusal !== undefined) throw new S3Error('NotImplemented', `casket does not accept customer-provided encryption keys (SSE-C) here: ${refusal}. Encrypt on the client instead.`);
    // SSE-C names its own encryption: a second method beside it is AWS's 400 (API_PutObject).
    if (headers[SSE] !== undefined) throw new S3Error('InvalidArgument', { message: 'Server Side Encryption with Customer provided key is incompatible with the encryption method specified', fields: { ArgumentName: SSE, ArgumentValue: headers[SSE] } });
    const object = customerKey(headers, CUSTOMER_KEY_HEADERS);
    const copySource = customerKey(headers, COPY_SOURCE_KEY_HEADERS);
    return { ...(object && { object }), ...(copySource && { copySource }) };
  }
  if (upstream) {
    // Only a write names how to encrypt what it writes; S3 answers a read that declares it 400 (s3-tests test_sse_kms_read_declare).
    if (operation !== undefined && !ENCRYPTING.has(operation)) {
      throw new S3Error('InvalidArgument', { message: `${names[0]} is not applicable to ${operation}: only a write says how to encrypt what it writes.`, fields: { ArgumentName: names[0]!, ArgumentValue: headers[names[0]!]! } });
    }
    const method = headers[SSE];
    // AWS's answer for an unknown method; a key id, context or bucket key without a method is the upstream's to judge.
    if (method !== undefined && !METHODS.has(method)) throw new S3Error('InvalidArgument', { message: 'The encryption method specified is not supported', fields: { ArgumentName: SSE, ArgumentValue: method } });
    return undefined;
  }
  const asked = headers[SSE] !== undefined ? `${SSE}: ${headers[SSE]}` : names.join(', ');
  throw new S3Error('NotImplemented', `casket does not carry server-side encryption (${asked}) yet: refused rather than stored unencrypted.`);
}

/**
 * One key's three headers, checked as S3 checks them before anything is read
 * or written (AWS's sentences; s3-tests test_encryption_sse_c_*): AES256, a
 * 256-bit key, its MD5. None of the three: no key of that kind.
 */
function customerKey(headers: Record<string, string>, names: { algorithm: string; key: string; keyMd5: string }): CustomerKey | undefined {
  const algorithm = headers[names.algorithm];
  const key = headers[names.key];
  const keyMd5 = headers[names.keyMd5];
  if (algorithm === undefined && key === undefined && keyMd5 === undefined) return undefined;
  const invalid = (name: string, message: string, value = headers[name] ?? '') => new S3Error('InvalidArgument', { message, fields: { ArgumentName: name, ArgumentValue: value } });
  if (algorithm !== 'AES256') throw invalid(names.algorithm, algorithm === undefined ? 'Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.' : 'The encryption algorithm specified is not valid.');
  if (key === undefined) throw invalid(names.key, 'Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key.');
  const raw = Buffer.from(key, 'base64');
  // The key itself is never echoed in an error.
  if (raw.length !== 32 || raw.toString('base64') !== key) throw invalid(names.key, 'The secret key was invalid for the specified algorithm.', '');
  if (keyMd5 === undefined) throw invalid(names.keyMd5, 'Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.');
  if (createHash('md5').update(raw).digest('base64') !== keyMd5) throw invalid(names.keyMd5, 'The calculated MD5 hash of the key did not match the hash that was provided.');
  return { algorithm, key, keyMd5 };
}
