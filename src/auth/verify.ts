/**
 * Picks the signature verifier by the form of a request's auth: Signature
 * Version 2 (`Authorization: AWS key:sig`, or `AWSAccessKeyId` / `Signature`
 * / `Expires` in the query) goes to sigv2.ts, everything else to sigv4.ts.
 * Both return the same AuthResult, so nothing downstream knows which it was.
 */
import type { CredentialLookup } from './credentials.js';
import { isSigV2, verifySigV2 } from './sigv2.js';
import { verifySigV4, type AuthResult, type SignedRequest } from './sigv4.js';

export interface VerifyOptions {
  /** Virtual-host domain: SigV2 signs the bucket of `bucket.<domain>` into its resource. */
  domain?: string;
  now?: Date;
}

/** null for an anonymous request; throws S3Error for one that does not verify. */
export function verifySignature(req: SignedRequest, lookup: CredentialLookup, options: VerifyOptions = {}): AuthResult | null {
  if (isSigV2(req)) return verifySigV2(req, lookup, options);
  return verifySigV4(req, lookup, options.now);
}
