/**
 * Who a POST Object form comes from and what its policy lets it write:
 * the form's signature (auth/post-policy.ts, with casket's STS sessions
 * when the form carries x-amz-security-token), then the key with
 * `${filename}` substituted, then every policy condition against the
 * fields, the URL's bucket and that key. handle.ts runs it where a header
 * signature is verified for every other operation, so the same policies,
 * agent identity, guard and stamps follow.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html
 */
import type { CredentialLookup } from '../auth/credentials.js';
import { checkPostPolicy, postFormAccessKey, verifyPostForm, type LengthRange } from '../auth/post-policy.js';
import { SESSION_KEY_PREFIX, withSession, type SessionSource } from '../auth/sessions.js';
import { createPayload, MAX_PUT_SIZE } from '../auth/payload.js';
import type { AuthResult } from '../auth/sigv4.js';
import type { RequestContext } from './context.js';
import { postObjectHeaders, postObjectKey, postPayloadHeaders } from './operations/post-object.js';
import type { PostForm } from './post-form.js';

export interface PostRequest {
  /** null: an anonymous form (no credential fields). */
  auth: AuthResult | null;
  key: string;
  /** The policy's content-length-range, enforced as the file streams. */
  range?: LengthRange;
}

export async function authenticatePostForm(form: PostForm, bucket: string, lookup: CredentialLookup, sessions: SessionSource): Promise<PostRequest> {
  const token = form.fields.get('x-amz-security-token');
  const accessKeyId = postFormAccessKey(form.fields);
  const session = token !== undefined && accessKeyId?.startsWith(SESSION_KEY_PREFIX) === true && !lookup(accessKeyId);
  const signed = verifyPostForm(form.fields, session ? await withSession(lookup, sessions, { accessKeyId, token }) : lookup);
  const key = postObjectKey(form.fields, form.filename);
  if (!signed) return { auth: null, key };
  // The bucket is the URL's, whatever a `bucket` field says; the key is the substituted one.
  const fields = new Map(form.fields).set('bucket', bucket).set('key', key);
  const range = checkPostPolicy(signed.policy, fields);
  return { auth: signed.auth, key, ...(range && { range }) };
}

/** What of the request context a form decides: who, which key, the headers its fields stand for, the file as the body. */
export type PostObjectContext = Pick<RequestContext, 'auth' | 'key' | 'headers' | 'body' | 'payload' | 'postForm'>;

export async function postObjectRequest(form: PostForm, bucket: string, req: { headers: Record<string, string>; secure?: boolean }, lookup: CredentialLookup, sessions: SessionSource): Promise<PostObjectContext & { key: string }> {
  const { auth, key, range } = await authenticatePostForm(form, bucket, lookup, sessions);
  const headers = postObjectHeaders(form.fields, req.headers);
  const payloadHeaders = postPayloadHeaders(headers);
  return {
    auth,
    key,
    headers,
    body: form.file,
    // The policy's content-length-range bounds the file as it streams (EntityTooLarge / EntityTooSmall).
    payload: () => createPayload(form.file, { auth, headers: payloadHeaders, maxSize: range?.max ?? MAX_PUT_SIZE, minSize: range?.min ?? 0 }),
    postForm: { fields: form.fields, secure: req.secure === true },
  };
}
