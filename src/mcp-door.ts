/**
 * The wiring behind src/mcp/door.ts: how the MCP endpoint authenticates a
 * caller (bearer token or SigV4), and an MCP tool's S3 request run in-process
 * through s3/in-process.ts — the same policy check, agent identity, guard,
 * read stamps, write log, retention and metrics as a request from the wire
 * (docs/design.md §8, "one guard").
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Credential, CredentialLookup } from './auth/credentials.js';
import { sessionRequest, withSession } from './auth/sessions.js';
import { verifySigV4, type AuthResult } from './auth/sigv4.js';
import { resolveAgent } from './guard/identity.js';
import { readToken, tokenHolds } from './mcp/token.js';
import { accessTokenKeyId } from './oauth/access-token.js';
import { oauthCaller } from './oauth/verify.js';
import { requestOrigin } from './oauth/metadata.js';
import { changesFor, diffFor, retainedFor } from './agent-changes.js';
import { changedSinceRead } from './changes/since-read.js';
import type { Services } from './s3/context.js';
import type { HandleOptions, Outcome } from './s3/handle.js';
import { callInProcess, readBody } from './s3/in-process.js';
import { NotAuthenticated, type Caller, type ChangesetAnswer, type CasketDoor, type EndpointRequest, type S3Answer, type S3Call, type S3Failure } from './mcp/door.js';
import { S3Error, isS3Error } from './vocabulary/errors.js';
import { formatETag } from './vocabulary/etag.js';
import { accessFor } from './s3/access.js';
import { objectResource } from './s3/actions.js';
import { refusalError } from './s3/refusal-error.js';
import { Refusal } from './guard/refusal.js';
import { writeConditionsFrom } from './s3/write.js';
import { ChangesetLanding, ChangesetRefused, commitChangeset, MAX_TOTAL_BYTES, type ChangesetEngine, type ChangesetEntry } from './changesets/commit.js';

export type Recorder = (outcome: Outcome, started: bigint, complete: boolean, bytesOut: number, bytesIn: number) => void;

const EMPTY_SHA256 = createHash('sha256').digest('hex');

/** The credential behind each caller the endpoint authenticated (a session's is in no static lookup). */
const credentials = new WeakMap<Caller, Credential>();

/** The credential of a caller the MCP endpoint verified. */
/** An S3 error as a tool sees it (door.ts S3Failure). */
function failureOf(e: S3Error): S3Failure {
  // Stryker disable next-line ConditionalExpression: as in s3 below: refusals (refusal-error.ts) set only the fields they have, and the other errors a changeset or a delete check meets (commit.ts, ChangesetLanding, staging's EntityTooLarge, AccessDenied) carry none; `true` fails door-changesets.test.ts
  return { status: e.status, code: e.code, message: e.message, fields: Object.fromEntries(Object.entries(e.fields).map(([k, v]) => [k, v === undefined ? undefined : String(v)])) };
}

function credentialOf(lookup: CredentialLookup, caller: Caller): Credential {
  const credential = credentials.get(caller) ?? lookup(caller.accessKeyId);
  // Stryker disable next-line StringLiteral: no tool is shown this sentence: every Caller a tool holds is the object authenticate made and recorded above (request-caller.ts carries it by reference), so its credential is always found
  if (!credential) throw new S3Error('InvalidAccessKeyId', 'The access key of this MCP session no longer exists.');
  return credential;
}

/** The AuthResult of a caller the MCP endpoint verified, for the introspection endpoints (no request body). */
function verifiedAs(lookup: CredentialLookup, caller: Caller, region: string): AuthResult {
  // Stryker disable next-line BooleanLiteral,ArrayDeclaration: diffFor, changesFor and retainedFor read only the credential; presigned and signedHeaders matter to a request with a body (merge-write.ts), which these are not
  return { credential: credentialOf(lookup, caller), presigned: false, payloadMode: 'literal', declaredSha256: EMPTY_SHA256, signedHeaders: [], region };
}

export function openMcpDoor(services: Services, options: HandleOptions, record: Recorder, settings: { agentWrites: 'require' | 'read-stamp'; diffMaxBytes: number; secure: boolean; publicUrl?: string }, changesets: ChangesetEngine): CasketDoor {
  const auth = (caller: Caller) => verifiedAs(options.lookup, caller, services.region);
  return {
    async authenticate(req: EndpointRequest): Promise<Caller | undefined> {
      const authorization = req.headers.authorization;
      if (authorization === undefined) return undefined;
      let credential: Credential | undefined;
      let claimed: string | undefined;
      const bearer = /^Bearer\s+(\S+)$/i.exec(authorization);
      if (bearer && accessTokenKeyId(bearer[1]!) !== undefined) {
        ({ credential, claimed } = await oauthCaller(bearer[1]!, options.lookup, services.state, requestOrigin(req.headers.host, settings.secure, settings.publicUrl)));
      } else if (bearer) {
        const claims = readToken(bearer[1]!);
        credential = claims && options.lookup(claims.accessKeyId);
        if (!claims || !credential || !tokenHolds(claims, credential.secretAccessKey)) throw new NotAuthenticated('The bearer token is not one casket issued, or it has expired: mint one with `casket mcp token`.');
        claimed = claims.agent;
      } else {
        const q = req.url.indexOf('?');
        // Stryker disable next-line EqualityOperator: q is never 0, an origin-form request target starts with "/" (RFC 9112 §3.2.1), so q < 0 and q <= 0 agree
        const signed = { method: req.method, rawPath: q < 0 ? req.url : req.url.slice(0, q), rawQuery: q < 0 ? '' : req.url.slice(q + 1), headers: req.headers };
        try {
          const session = sessionRequest(options.lookup, req.headers, signed.rawQuery);
          const lookup = session ? await withSession(options.lookup, services.state, session) : options.lookup;
          const auth = verifySigV4(signed, lookup);
          if (!auth) return undefined;
          if (auth.declaredSha256 !== undefined && auth.declaredSha256 !== createHash('sha256').update(req.body).digest('hex')) throw new NotAuthenticated('The body does not match the signed x-amz-content-sha256.');
          credential = auth.credential;
        } catch (e) {
          if (isS3Error(e)) throw new NotAuthenticated(e.message);
          throw e;
        }
        claimed = req.headers[options.agentHeader];
      }
      let agent: string | undefined;
      try {
        agent = resolveAgent(credential.agent, claimed);
      } catch (e) {
        throw new NotAuthenticated((e as Error).message);
      }
      // Stryker disable next-line ConditionalExpression: an own `agent: undefined` reads as no agent to every reader of a Caller (each tests caller.agent against undefined, or takes it with ??)
      const caller: Caller = { accessKeyId: credential.accessKeyId, ...(agent !== undefined && { agent }) };
      credentials.set(caller, credential);
      return caller;
    },
    agentWrites: settings.agentWrites,
    diffMaxBytes: settings.diffMaxBytes,
    async s3(caller: Caller, call: S3Call, read): Promise<S3Answer> {
      const started = process.hrtime.bigint();
      const sent = call.body?.length ?? 0;
      let credential: Credential;
      try {
        credential = credentialOf(options.lookup, caller);
      } catch (e) {
        const err = e as S3Error;
        return { status: err.status, headers: {}, failure: { status: err.status, code: err.code, message: err.message, fields: {} } };
      }
      const client = {
        userAgent: 'casket-mcp',
        // Stryker disable next-line ConditionalExpression: `agent: undefined` sends no agent header, as no agent does (s3/in-process.ts tests client.agent against undefined)
        ...(caller.agent !== undefined && { agent: caller.agent }),
      };
      const outcome = await callInProcess(services, options, credential, client, call);
      const res = outcome.response;
      if (outcome.error) {
        if (res.body instanceof Readable) res.body.destroy();
        record(outcome, started, true, 0, sent);
        const fields: Record<string, string | undefined> = {};
        // Stryker disable next-line ConditionalExpression: no S3 error a tool's request meets holds an undefined field (refusal-error.ts sets only the fields it has; the others name values they hold), so `false` (String(v) alone) answers the same; `true`, which blanks every field, fails refusal-views.test.ts
        for (const [k, v] of Object.entries(outcome.error.fields)) fields[k] = v === undefined ? undefined : String(v);
        return { status: res.status, headers: res.headers, failure: { status: res.status, code: outcome.error.code, message: outcome.error.message, fields } };
      }
      let content: Buffer | undefined;
      // Stryker disable next-line ConditionalExpression: a HEAD answer has no content (RFC 9110 §9.3.2); reading its empty body gives the tools the same answer and the same stamp
      if (call.method !== 'HEAD') {
        // Stryker disable next-line ArithmeticOperator: every GET a tool makes names its maxBytes; the calls without `read` (PUT, DELETE, CopyObject) answer no body or an XML string, which readBody returns whole whatever the limit
        const whole = await readBody(res.body, read?.maxBytes ?? 16 * 1024 * 1024, 'stop').catch(async (e: unknown) => {
          // A body that fails midway (a disk, an upstream reset) ends the request as the wire's does (server.ts
          // writeToNode): an incomplete read, logged as aborted; the tool answers the failure (tool-calls.ts).
          await res.onFinish?.(false);
          record(outcome, started, false, 0, sent);
          throw e;
        });
        if (whole === undefined) {
          await res.onFinish?.(false);
          record(outcome, started, false, 0, sent);
          const message = `The object is larger than ${read?.maxBytes} bytes, the most this tool reads.`;
          return { status: 400, headers: res.headers, failure: { status: 400, code: 'EntityTooLarge', message, fields: {} } };
        }
        content = whole;
      }
      // The read stamp (docs/design.md §4) is recorded when the response finishes:
      // complete = the agent was shown every byte. A read that entitles
      // nothing (edit_file's own read of its base) records no stamp at all.
      // Stryker disable next-line StringLiteral: only a GetObject answer has onFinish (a read stamp), and every GET a tool makes names its stamp; the default decides nothing
      const decide = read?.stamp ?? 'full';
      const kind = typeof decide === 'function' ? decide(content ?? Buffer.alloc(0)) : decide;
      if (kind !== 'none') await res.onFinish?.(kind === 'full');
      record(outcome, started, true, content?.length ?? 0, sent);
      return { status: res.status, headers: res.headers, ...(content && { body: content }) };
    },
    async diff(caller, bucket, key, from, to) {
      const query = new URLSearchParams({ bucket, key, from, to });
      const res = await diffFor(auth(caller), services, query).catch((e: unknown) => {
        if (isS3Error(e)) return undefined;
        throw e;
      });
      if (!res || res.status !== 200 || typeof res.body !== 'string') return undefined;
      return { text: res.body, truncated: res.headers?.['x-casket-diff-truncated'] === 'true' };
    },
    async changes(caller, since) {
      if (caller.agent === undefined) return { status: 400, body: { error: 'InvalidRequest', message: 'what_changed is for agents: this credential is not bound to one.' } };
      // The caller acts as caller.agent: authenticate resolved its claim (resolveAgent) or its key is bound to it.
      const res = await changesFor(auth(caller), services, caller.agent, new URLSearchParams(since !== undefined ? { since } : {}), true).catch((e: unknown) => {
        if (isS3Error(e)) return { status: e.status, body: { error: e.code, message: e.message } };
        throw e;
      });
      return { status: res.status, body: res.body };
    },
    async commit(caller, files): Promise<ChangesetAnswer> {
      const id = changesets.dir.newId();
      // Until the engine has it, the staged bodies are this call's to remove (the engine keeps a decided one for recovery).
      let handedOver = false;
      try {
        const credential = credentialOf(options.lookup, caller);
        const entries: ChangesetEntry[] = [];
        for (const [n, f] of files.entries()) {
          const body = f.content && (await changesets.dir.stage(id, n, Readable.from([f.content]), MAX_TOTAL_BYTES, () => new S3Error('EntityTooLarge')));
          // Stryker disable next-line ConditionalExpression: `contentType: undefined` is no content type to the engine (changesets/commit.ts tests it against undefined)
          entries.push({ bucket: f.bucket, key: f.key, conditions: writeConditionsFrom(f.headers), ...(body && { body }), ...(f.contentType !== undefined && { contentType: f.contentType }) });
        }
        const access = accessFor(credential, () => {});
        handedOver = true;
        // Stryker disable next-line ConditionalExpression: `agent: undefined` is no agent to the engine (changesets/commit.ts tests caller.agent against undefined or passes it on as is)
        const result = await commitChangeset(services, changesets, { requestId: id, accessKey: credential.accessKeyId, access, ...(caller.agent !== undefined && { agent: caller.agent }) }, id, entries);
        return { landed: result.landed.map((l) => ({ bucket: l.bucket, key: l.key, etag: l.etag === null ? null : formatETag(l.etag, false) })) };
      } catch (e) {
        if (!handedOver) await changesets.dir.discard(id);
        if (e instanceof ChangesetRefused) return { refused: e.refusals.map((r) => ({ bucket: r.bucket, key: r.key, failure: failureOf(refusalError(r, false)) })) };
        if (e instanceof ChangesetLanding) return { landing: failureOf(e) };
        if (isS3Error(e)) return { failure: failureOf(e) };
        throw e;
      }
    },
    async mayDelete(caller, bucket, key, headers) {
      try {
        accessFor(credentialOf(options.lookup, caller), () => {}).authorize({ action: 's3:DeleteObject', resource: objectResource(bucket, key) });
        await services.guard.checkWrite({ bucket, key, agent: caller.agent, current: () => services.backend.headObject(bucket, key), conditions: writeConditionsFrom(headers) });
        return undefined;
      } catch (e) {
        if (e instanceof Refusal) return failureOf(refusalError(e, false));
        if (isS3Error(e)) return failureOf(e);
        throw e;
      }
    },
    async stamp(agent, bucket, key) {
      const s = await services.state.getStamp(agent, bucket, key);
      return s && { etag: s.etag, full: s.full };
    },
    async retained(caller, bucket, key, etag) {
      // The caller's own policy for this key, and a version kept for this key only (docs/design.md §14).
      return retainedFor(auth(caller), services, bucket, key, etag).catch((e: unknown) => {
        // Stryker disable next-line ConditionalExpression: no S3Error reaches here from the one caller: edit_file asks only once its GET of the same key failed its If-Match, after the s3:GetObject that retainedFor checks was allowed (AccessDenied comes first)
        if (isS3Error(e)) return undefined;
        throw e;
      });
    },
    async writerOf(bucket, key, etag) {
      const log = await services.state.listWriteLog({ bucket, key, limit: 100 }).catch(() => []);
      const entry = log.find((e) => e.newETag === etag.replace(/"/g, ''));
      if (entry?.agent) return { agent: entry.agent };
      return entry?.accessKey ? { accessKey: entry.accessKey } : {};
    },
    async changedSinceRead(caller) {
      if (caller.agent === undefined) return [];
      const credential = credentialOf(options.lookup, caller);
      // A key bound to no agent may act as any (resolveAgent): it is told the agent's changes only to files its own policy lets it read, as what_changed lists them (agent-changes.ts changesFor).
      const own = credential.admin === true || credential.agent === caller.agent;
      const access = accessFor(credential, () => {});
      const changed = (await changedSinceRead(services.state, caller.agent)).filter((c) => own || access.allows({ action: 's3:GetObject', resource: objectResource(c.bucket, c.key) }));
      // Stryker disable next-line ConditionalExpression: `etag: undefined` reads as no etag to reminders.ts (`c.etag === undefined`), the one reader
      return changed.map((c) => ({ bucket: c.bucket, key: c.key, readETag: c.readETag, ...(c.etag !== undefined && { etag: c.etag }), changedBy: c.changedBy, changedAt: c.changedAt.toISOString() }));
    },
  };
}
