/**
 * Introspection for orchestrators (docs/design.md §5), admin credentials only, signed
 * with SigV4 like any S3 request:
 *   GET /_casket/agents/{agent}/stamps  — what the agent last read of each key,
 *       whether whole, and whether someone else has written since (stale);
 *   GET /_casket/writes?bucket=&key=&agent=&limit= — the write log, newest
 *       first: who replaced which version with which, when;
 *   DELETE /_casket/sessions/{accessKeyId} — revokes a credential minted by
 *       STS AssumeRole (docs/design.md §7) on every replica sharing the state store.
 * JSON, because the consumers are programs, not S3 clients. ETags are
 * quoted as S3 shows them everywhere else, so one can go straight into an
 * If-Match.
 */
import type { Credential, CredentialLookup } from './auth/credentials.js';
import { signedRequestFromNode, verifySigV4, type SignedRequest } from './auth/sigv4.js';
import { isS3Error, S3Error } from './vocabulary/errors.js';
import { formatETag } from './vocabulary/etag.js';
import type { Services } from './s3/context.js';

export interface AdminResponse {
  status: number;
  body: unknown;
}

const quoted = (etag: string) => formatETag(etag, false);

function authorize(req: SignedRequest, lookup: CredentialLookup): void {
  const auth = verifySigV4(req, lookup);
  if (!auth) throw new S3Error('AccessDenied', 'Sign introspection requests with an admin access key.');
  if (!auth.credential.admin) throw new S3Error('AccessDenied', 'Introspection needs an admin access key.');
}

/**
 * The admin credential a fetch Request is SigV4-signed with (the event
 * stream's check, events/stream.ts), or why it is not, in words that say
 * what to fix (a missing header is not "sign the request"). The request as it
 * arrived: path and query as sent, headers as received.
 */
export function adminSigner(request: Request, lookup: CredentialLookup): Credential | string {
  const url = new URL(request.url);
  const raw: string[] = [];
  request.headers.forEach((value, name) => raw.push(name, value));
  try {
    const auth = verifySigV4(signedRequestFromNode(request.method, url.pathname + url.search, raw), lookup);
    if (!auth) return 'This endpoint needs an admin credential: sign the request (SigV4) with an admin access key.';
    if (auth.credential.admin !== true) return `This endpoint needs an admin credential: access key ${auth.credential.accessKeyId} is not an admin key.`;
    return auth.credential;
  } catch (e) {
    // A signature that does not verify (SignatureDoesNotMatch, a missing or malformed header): its own words, 403.
    if (isS3Error(e)) return `The request's signature was not accepted: ${e.code}: ${e.message}`;
    throw e;
  }
}

export async function agentStamps(req: SignedRequest, lookup: CredentialLookup, services: Services, agent: string): Promise<AdminResponse> {
  authorize(req, lookup);
  const entries = await services.state.listStamps(agent);
  const stamps = await Promise.all(
    entries.map(async ({ bucket, key, stamp }) => {
      const current = await services.backend.headObject(bucket, key).catch(() => null);
      return {
        bucket,
        key,
        etag: quoted(stamp.etag),
        full: stamp.full,
        readAt: new Date(stamp.at).toISOString(),
        currentETag: current ? quoted(current.etag) : null,
        currentWriter: current?.writer ?? null,
        // Someone else has written (or deleted) since this agent's read.
        stale: current?.etag !== stamp.etag,
      };
    }),
  );
  return { status: 200, body: { agent, stamps, stale: stamps.filter((s) => s.stale).map((s) => ({ bucket: s.bucket, key: s.key })) } };
}

export async function writeLog(req: SignedRequest, lookup: CredentialLookup, services: Services, query: URLSearchParams): Promise<AdminResponse> {
  authorize(req, lookup);
  const limit = Math.min(Math.max(Number(query.get('limit') ?? '100') || 100, 1), 10_000);
  const entries = await services.state.listWriteLog({
    limit,
    ...(query.get('bucket') !== null && { bucket: query.get('bucket')! }),
    ...(query.get('key') !== null && { key: query.get('key')! }),
    ...(query.get('agent') !== null && { agent: query.get('agent')! }),
  });
  const writes = entries.map(({ previousETag, newETag, ...e }) => ({
    ...e,
    at: e.at.toISOString(),
    ...(previousETag !== undefined && { previousETag: quoted(previousETag) }),
    ...(newETag !== undefined && { newETag: quoted(newETag) }),
  }));
  return { status: 200, body: { writes } };
}

export async function revokeSession(req: SignedRequest, lookup: CredentialLookup, services: Services, accessKeyId: string): Promise<AdminResponse> {
  authorize(req, lookup);
  const revoked = await services.state.revokeSession(accessKeyId);
  return { status: revoked ? 200 : 404, body: { accessKeyId, revoked } };
}
