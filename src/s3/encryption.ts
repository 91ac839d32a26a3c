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
 *   (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ServerSideEncryptionCustomerKeys.html);
 *   over TLS, 501 NotImplemented. casket reads objects itself (copy as GET +
 *   guarded PUT, retention of pre-images, diff, merge, ETag computation,
 *   rollback): with SSE-C each of those reads needs the customer's key, which
 *   casket must not keep, and a retained pre-image would be plaintext at rest.
 * - SSE-KMS (`x-amz-server-side-encryption: aws:kms` / `aws:kms:dsse`, key id,
 *   context, bucket key) and SSE-S3 (`AES256`): in front of an upstream they
 *   go up with PutObject, CreateMultipartUpload and CopyObject and its answer
 *   headers come back (the upstream encrypts and decrypts; casket's own reads
 *   need no key). On the embedded store, 501 NotImplemented: it does not
 *   encrypt at rest, so echoing `AES256` would be a lie.
 * Any request carrying one of these headers is refused, whatever the
 * operation: a GET or HEAD with SSE-C keys names an object casket never
 * stored that way.
 */
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
 * Throws the S3 error for a request that asks for server-side encryption
 * casket cannot carry; `secure`: it came over TLS; `upstream`: the backend is
 * an upstream that encrypts SSE-S3 / SSE-KMS itself.
 */
export function refuseEncryption(headers: Record<string, string>, secure: boolean, upstream = false, operation?: string): void {
  const names = Object.keys(headers).filter((name) => name.startsWith(SSE) || SSE_C_PREFIXES.some((p) => name.startsWith(p)));
  if (names.length === 0) return;
  if (names.some((name) => SSE_C_PREFIXES.some((p) => name.startsWith(p)))) {
    if (!secure) throw new S3Error('InvalidRequest', SSE_C_NEEDS_TLS);
    throw new S3Error(
      'NotImplemented',
      'casket does not accept customer-provided encryption keys (SSE-C): it reads objects itself (copies, pre-images, diffs, merges) and would need to keep your key. Encrypt on the client instead.',
    );
  }
  if (upstream) {
    // Only a write names how to encrypt what it writes; S3 answers a read that declares it 400 (s3-tests test_sse_kms_read_declare).
    if (operation !== undefined && !ENCRYPTING.has(operation)) {
      throw new S3Error('InvalidArgument', { message: `${names[0]} is not applicable to ${operation}: only a write says how to encrypt what it writes.`, fields: { ArgumentName: names[0]!, ArgumentValue: headers[names[0]!]! } });
    }
    const method = headers[SSE];
    // AWS's answer for an unknown method; a key id, context or bucket key without a method is the upstream's to judge.
    if (method !== undefined && !METHODS.has(method)) throw new S3Error('InvalidArgument', { message: 'The encryption method specified is not supported', fields: { ArgumentName: SSE, ArgumentValue: method } });
    return;
  }
  const asked = headers[SSE] !== undefined ? `${SSE}: ${headers[SSE]}` : names.join(', ');
  throw new S3Error('NotImplemented', `casket does not carry server-side encryption (${asked}) yet: refused rather than stored unencrypted.`);
}
