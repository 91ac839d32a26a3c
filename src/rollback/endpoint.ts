/**
 * `POST /_casket/rollback` (docs/design.md §10): admin credentials only,
 * signed with SigV4 like the introspection endpoints (src/admin.ts), the
 * signed payload hash checked against the body. The body is a JSON
 * RollbackRequest (plan.ts); the answer a JSON RollbackAnswer: restored,
 * conflicts (with diffs), unrecoverable and unchanged keys.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { signedRequestFromNode, verifySigV4 } from '../auth/sigv4.js';
import type { Services } from '../s3/context.js';
import type { HandleOptions } from '../s3/handle.js';
import { S3Error, isS3Error } from '../vocabulary/errors.js';
import type { ChangesetEngine } from '../changesets/commit.js';
import { runRollback } from './apply.js';
import { rollbackChangeset } from './changeset.js';
import { parseRollbackRequest, ROLLBACK_PATH } from './plan.js';

export { ROLLBACK_PATH };

/** Largest request body: a few fields of JSON. */
const MAX_BODY = 64 * 1024;

export interface RollbackResponse {
  status: number;
  body: unknown;
}

/** `readBody` is called only once the caller is known to be an admin and the body's declared length is small. */
export async function rollbackEndpoint(incoming: IncomingMessage | undefined, readBody: () => Promise<ArrayBuffer>, services: Services, options: HandleOptions, changesets: ChangesetEngine): Promise<RollbackResponse> {
  try {
    // Stryker disable next-line ConditionalExpression,StringLiteral: @hono/node-server hands every request it serves its IncomingMessage; only another adapter would not
    if (!incoming) throw new Error('the rollback endpoint needs a socket');
    // Stryker disable next-line LogicalOperator,StringLiteral: node:http sets method and url on every request a server parses (https://nodejs.org/api/http.html#messagemethod)
    const req = signedRequestFromNode(incoming.method ?? 'POST', incoming.url ?? ROLLBACK_PATH, incoming.rawHeaders);
    const auth = verifySigV4(req, options.lookup);
    if (!auth) throw new S3Error('AccessDenied', 'Sign rollback requests with an admin access key.');
    if (!auth.credential.admin) throw new S3Error('AccessDenied', 'Rollback needs an admin access key.');
    const length = req.headers['content-length'];
    if (length === undefined) throw new S3Error('MissingContentLength', 'Send the rollback request with a Content-Length.');
    // Stryker disable next-line Regex: node:http's parser answers 400 to a Content-Length that is not all digits before any handler runs
    if (!/^\d+$/.test(length) || Number(length) > MAX_BODY) throw new S3Error('InvalidRequest', 'The rollback request is too large.');
    const body = Buffer.from(await readBody());
    // The signature covers the payload hash, not the body: the body must be what was signed
    // (UNSIGNED-PAYLOAD declares none, and is refused the same way).
    if (auth.declaredSha256 !== createHash('sha256').update(body).digest('hex')) {
      throw new S3Error('XAmzContentSHA256Mismatch', 'Sign the rollback request with the SHA-256 of its body as x-amz-content-sha256.');
    }
    const request = parseRollbackRequest(body);
    const { changeset } = request;
    const answer = changeset !== undefined ? await rollbackChangeset(services, options, changesets, auth.credential, { ...request, changeset }) : await runRollback(services, options, changesets, auth.credential, request);
    // Stryker disable next-line ObjectLiteral,ConditionalExpression,EqualityOperator,StringLiteral: the operator's log line, which no answer carries (tests run casket with --log-level silent)
    services.log.info({ agent: answer.agent, ...(answer.changeset !== undefined && { changeset: answer.changeset }), by: auth.credential.accessKeyId, dryRun: answer.dryRun, restored: answer.restored.length, conflicts: answer.conflicts.length, unrecoverable: answer.unrecoverable.length, unchanged: answer.unchanged.length }, 'rollback');
    return { status: 200, body: answer };
  } catch (e) {
    if (isS3Error(e)) return { status: e.status, body: { error: e.code, message: e.message } };
    services.log.error({ err: e }, 'rollback failed');
    return { status: 500, body: { error: 'InternalError', message: 'The rollback stopped; keys already restored stay restored: run it again to finish.' } };
  }
}
