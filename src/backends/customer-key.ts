/**
 * SSE-C keys (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ServerSideEncryptionCustomerKeys.html)
 * travel with the request that carries them, never further: the S3 layer runs
 * the request's handler inside `withCustomerKeys`, and every object request
 * casket itself sends upstream while serving it — the GET or PUT, and the
 * HEADs, ETag computations, ranged reads and condition checks it makes on
 * the way — carries the caller's key (client.ts). Nothing outside the scope
 * does: another caller's request, a listing's HEAD, a background reaper, an
 * MCP read. So casket reads an SSE-C object only with the key of the caller
 * it serves, and the upstream refuses any other read.
 *
 * A copy's source is read with the copy-source key (`asCopySource`), its
 * destination written with the request's own key, as S3 takes them
 * (x-amz-copy-source-server-side-encryption-customer-*, API_CopyObject).
 *
 * What casket keeps between requests (retained versions, pre-images) must
 * never hold bytes read or written under a customer key: `underCustomerKey`
 * says whether the running request carries one (retention/retainer.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** One customer-provided key as its three headers carry it. */
export interface CustomerKey {
  algorithm: string;
  /** Base64 of the 256-bit key. */
  key: string;
  /** Base64 of the key's MD5. */
  keyMd5: string;
}

export interface CustomerKeys {
  /** The key of the object the request reads or writes. */
  object?: CustomerKey;
  /** The key of a copy's source (CopyObject, UploadPartCopy). */
  copySource?: CustomerKey;
}

export const CUSTOMER_KEY_HEADERS = {
  algorithm: 'x-amz-server-side-encryption-customer-algorithm',
  key: 'x-amz-server-side-encryption-customer-key',
  keyMd5: 'x-amz-server-side-encryption-customer-key-md5',
} as const;

export const COPY_SOURCE_KEY_HEADERS = {
  algorithm: 'x-amz-copy-source-server-side-encryption-customer-algorithm',
  key: 'x-amz-copy-source-server-side-encryption-customer-key',
  keyMd5: 'x-amz-copy-source-server-side-encryption-customer-key-md5',
} as const;

const scope = new AsyncLocalStorage<CustomerKeys>();

/** Runs `fn` (a request's handler) with the caller's keys. */
export function withCustomerKeys<T>(keys: CustomerKeys, fn: () => T): T {
  return scope.run(keys, fn);
}

/** Runs `fn` (the read of a copy's source) with the copy-source key as the object's key — or none. */
export function asCopySource<T>(fn: () => T): T {
  const keys = scope.getStore();
  if (keys === undefined) return fn();
  return scope.run(keys.copySource ? { object: keys.copySource } : {}, fn);
}

/** Runs `fn` with no customer key, whatever request started it (the upstream probe, shared by every request). */
export function outsideCustomerKeys<T>(fn: () => T): T {
  return scope.exit(fn);
}

/** `fn` bound to the keys of the request running now: an ObjectReader's later open() reads with them. */
export function bindToCustomerKeys<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return scope.getStore() === undefined ? fn : AsyncLocalStorage.bind(fn);
}

/** Whether the running request carries a customer key (for its object or a copy's source). */
export function underCustomerKey(): boolean {
  const keys = scope.getStore();
  return keys?.object !== undefined || keys?.copySource !== undefined;
}

/** The object key's headers for an upstream object request made now, or none. */
export function customerKeyHeaders(): Record<string, string> {
  const key = scope.getStore()?.object;
  if (!key) return {};
  return { [CUSTOMER_KEY_HEADERS.algorithm]: key.algorithm, [CUSTOMER_KEY_HEADERS.key]: key.key, [CUSTOMER_KEY_HEADERS.keyMd5]: key.keyMd5 };
}
