/**
 * One S3 request, start to finish, on plain values (no Hono, no socket):
 * authenticate → resolve bucket/key → detect the operation → identify the
 * agent → run the handler → render any error as S3 XML. server.ts feeds it
 * from the socket and writes what it returns.
 */
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Credential, CredentialLookup } from '../auth/credentials.js';
import { missingSessionToken, sessionKeyWithoutToken, sessionRequest, withSession } from '../auth/sessions.js';
import type { AuthResult } from '../auth/sigv4.js';
import { verifySignature } from '../auth/verify.js';
import { assumeRole, isStsRequest } from '../sts/assume-role.js';
import { resolveAgent } from '../guard/identity.js';
import { Refusal } from '../guard/refusal.js';
import type { EtagSuffixPolicy } from '../config.js';
import { accessFor, type Denial } from './access.js';
import { requiredAccess } from './actions.js';
import { resolveTarget } from './addressing.js';
import { payloadFactory, type RequestContext, type Services } from './context.js';
import { actualRequestHeaders, preflight } from './cors.js';
import { detectOperation } from './detect.js';
import { refuseEncryption } from './encryption.js';
import { refuseObjectLock } from './passthrough.js';
import { HANDLERS } from './dispatch.js';
import { S3Error, isS3Error } from '../vocabulary/errors.js';
import type { Operation } from './operations.js';
import { refusalError } from './refusal-error.js';
import { readPostForm, type PostForm } from './post-form.js';
import { postObjectRequest } from './post-request.js';
import { errorResponse, OBJECT_BODY_HEADERS, type S3Response } from './respond.js';
import { CHANGED_SINCE_READ_HEADER, changedSinceReadHeader, wantsChangedSinceRead } from './changed-since-read-header.js';

export interface RawRequest {
  method: string;
  /** Request target as received: path and query, still percent-encoded. */
  url: string;
  headers: Record<string, string>;
  body: Readable;
  /** Sends `100 Continue` if the client asked for it (and only once). */
  sendContinue(): void;
  /**
   * The caller as another front door already authenticated it (the MCP
   * endpoint: a bearer token or a SigV4-signed POST, src/mcp/). Only the
   * signature step is skipped: policies, agent identity, guard and stamps run
   * as for any S3 request. Never set from the wire.
   */
  verified?: AuthResult;
  /** The request came over TLS: SSE-C is refused over plain HTTP, as AWS refuses it. */
  secure?: boolean;
}

export interface HandleOptions {
  lookup: CredentialLookup;
  anonymous: 'none' | 'read';
  domain?: string;
  agentHeader: string;
  etagSuffix: EtagSuffixPolicy;
  /** Shortest DurationSeconds STS AssumeRole accepts (default 900, as AWS). */
  stsMinDurationSeconds?: number;
}

export interface Outcome {
  response: S3Response;
  requestId: string;
  operation?: Operation | 'AssumeRole';
  bucket?: string;
  key?: string;
  agent?: string;
  accessKey?: string;
  error?: S3Error;
  /** Accesses the credential's policies refused (docs/design.md §7): logged and counted by server.ts. */
  denials?: Denial[];
  /** An unexpected failure, rendered as InternalError: the caller logs it. */
  internal?: unknown;
}

/**
 * Clients that take a dash-less ETag for an MD5 of the body (README "Clients"):
 * AWS SDK for Java v1 names itself; s3cmd 2.3.0 sends no User-Agent at all
 * (Python's http.client adds none), while every SDK and tool measured here
 * sends one — so a request without a User-Agent gets the `-1` form too.
 */
const MD5_ETAG_CLIENTS = /\bs3cmd\/|aws-sdk-java\/1\./i;

function wantsSuffixedETag(userAgent: string | undefined): boolean {
  return userAgent === undefined || userAgent.trim() === '' || MD5_ETAG_CLIENTS.test(userAgent);
}

/**
 * How much of a form's rest casket reads after answering it (a refused file,
 * fields after the file): enough for a browser's small form to keep its
 * connection; a larger rest is not received, the connection is closed.
 */
const FORM_DISCARD_BYTES = 1024 * 1024;

const READ_ONLY: ReadonlySet<Operation> = new Set<Operation>(['GetObject', 'HeadObject', 'GetObjectAttributes', 'ListObjects', 'ListObjectsV2', 'ListObjectVersions', 'HeadBucket', 'GetBucketLocation']);

/**
 * Request ids: a random per-process prefix and a counter — unique across
 * replicas and restarts without drawing random bytes per request (which cost
 * ~4% of a small GET, measured with --cpu-prof).
 */
const REQUEST_ID_PREFIX = randomBytes(4).toString('hex').toUpperCase();
let requestCounter = 0;

export function newRequestId(): string {
  requestCounter = (requestCounter + 1) % 0x100000000;
  return REQUEST_ID_PREFIX + requestCounter.toString(16).toUpperCase().padStart(8, '0');
}

export async function handleS3(req: RawRequest, services: Services, options: HandleOptions, requestId = newRequestId()): Promise<Outcome> {
  const q = req.url.indexOf('?');
  const rawPath = q < 0 ? req.url : req.url.slice(0, q);
  const rawQuery = q < 0 ? '' : req.url.slice(q + 1);
  const outcome: Outcome = { requestId, response: { status: 500, headers: {} } };
  let form: PostForm | undefined;
  let etagSuffix = options.etagSuffix === 'always';
  try {
    if (options.etagSuffix === 'auto') etagSuffix = wantsSuffixedETag(req.headers['user-agent']);
    if (isStsRequest(req.method, rawPath, rawQuery, req.headers) && resolveTarget(rawPath, req.headers.host, options.domain).bucket === undefined) {
      // STS AssumeRole (docs/design.md §7) on the same endpoint: its own wire format and errors.
      outcome.operation = 'AssumeRole';
      req.sendContinue();
      const sts = await assumeRole({ ...req, rawPath, rawQuery }, services.state, { lookup: options.lookup, minDurationSeconds: options.stsMinDurationSeconds ?? 900 }, services.log, requestId);
      outcome.response = { status: sts.status, headers: sts.headers, body: sts.body };
      if (sts.accessKey !== undefined) outcome.accessKey = sts.accessKey;
      if (sts.internal !== undefined) outcome.internal = sts.internal;
      if (sts.denial) outcome.denials = [sts.denial];
      Object.assign(outcome.response.headers, OBJECT_BODY_HEADERS);
      outcome.response.headers['x-amz-request-id'] = requestId;
      return outcome;
    }
    if (req.method === 'OPTIONS') {
      // A CORS preflight: browsers send it unsigned, so it is answered from the bucket's rules before auth.
      const target = resolveTarget(rawPath, req.headers.host, options.domain);
      outcome.bucket = target.bucket;
      outcome.key = target.key;
      outcome.response = await preflight(services.backend, target.bucket, req.headers);
      outcome.response.headers['x-amz-request-id'] = requestId;
      return outcome;
    }
    // Session credentials (x-amz-security-token) wait for the state store; static keys do not.
    const session = req.verified ? undefined : sessionRequest(options.lookup, req.headers, rawQuery);
    const lookup = session ? await withSession(options.lookup, services.state, session) : options.lookup;
    const tokenless = session || req.verified ? undefined : sessionKeyWithoutToken(options.lookup, req.headers, rawQuery);
    if (tokenless !== undefined) {
      const missing = await missingSessionToken(services.state, tokenless);
      if (missing) throw missing;
    }
    let auth = req.verified ?? verifySignature({ method: req.method, rawPath, rawQuery, headers: req.headers }, lookup, options.domain !== undefined ? { domain: options.domain } : {});
    const target = resolveTarget(rawPath, req.headers.host, options.domain);
    outcome.bucket = target.bucket;
    outcome.key = target.key;
    const query = new URLSearchParams(rawQuery);
    const operation = detectOperation(req.method, target.bucket, target.key, query, req.headers);
    outcome.operation = operation;
    let { key } = target;
    let headers = req.headers;
    let body = req.body;
    let payload = payloadFactory(req.body, auth, req.headers, req.sendContinue);
    let postForm: RequestContext['postForm'];
    if (operation === 'PostObject') {
      // The form carries the signature, the key and the headers (s3/post-request.ts): read up to its file part.
      req.sendContinue();
      form = await readPostForm(req.body, req.headers['content-type']);
      ({ auth, key, headers, body, payload, postForm } = await postObjectRequest(form, target.bucket!, req, options.lookup, services.state));
      outcome.key = key;
    }
    if (!auth && !(options.anonymous === 'read' && READ_ONLY.has(operation))) {
      throw new S3Error('AccessDenied', 'Anonymous access is not allowed: sign requests with a casket access key.');
    }
    const credential: Credential | undefined = auth?.credential;
    const agent = resolveAgent(credential?.agent, req.headers[options.agentHeader]);
    outcome.agent = agent;
    outcome.accessKey = credential?.accessKeyId;
    // Policies (docs/design.md §7): checked once here, before any handler asks for the body.
    const access = accessFor(credential, (denial) => (outcome.denials ??= []).push(denial));
    for (const needed of requiredAccess({ operation, method: req.method, bucket: target.bucket, key, query, headers })) access.authorize(needed);
    // A form's encryption fields ask what PutObject's headers ask (encryption.ts); so do its lock fields.
    refuseEncryption(headers, req.secure === true, services.backend.forward !== undefined, operation === 'PostObject' ? 'PutObject' : operation);
    refuseObjectLock(headers, services.backend.forward !== undefined);
    const ctx: RequestContext = {
      requestId,
      operation,
      method: req.method,
      bucket: target.bucket,
      key,
      query,
      headers,
      auth,
      accessKey: credential?.accessKeyId,
      agent,
      access,
      etagSuffix,
      body,
      payload,
      ...(postForm && { postForm }),
    };
    outcome.response = await HANDLERS[operation](ctx, services);
  } catch (e) {
    let err: S3Error;
    if (e instanceof Refusal) {
      services.guard.report(e, outcome.agent, { accessKey: outcome.accessKey, requestId, operation: outcome.operation });
      err = refusalError(e, etagSuffix);
    }
    else if (isS3Error(e)) err = e;
    else {
      err = new S3Error('InternalError');
      outcome.internal = e;
    }
    outcome.error = err;
    outcome.response = errorResponse(err, requestId, rawPath, req.method);
  }
  // The rest of a form (the refused file, fields after it), so a small one keeps its connection.
  await form?.discard(FORM_DISCARD_BYTES);
  if (req.headers.origin !== undefined && req.method !== 'OPTIONS') {
    Object.assign(outcome.response.headers, await actualRequestHeaders(services.backend, outcome.bucket, req.method, req.headers));
  }
  Object.assign(outcome.response.headers, OBJECT_BODY_HEADERS);
  if (outcome.agent !== undefined && wantsChangedSinceRead(req.headers)) {
    // Best effort, as the stamps of a read are: a store that cannot answer costs the header, not the answer.
    const delivered = outcome.operation === 'GetObject' && outcome.bucket !== undefined && outcome.key !== undefined ? { bucket: outcome.bucket, key: outcome.key } : undefined;
    const changed = await changedSinceReadHeader(services.state, outcome.agent, delivered).catch(() => undefined);
    if (changed !== undefined) outcome.response.headers[CHANGED_SINCE_READ_HEADER] = changed;
  }
  outcome.response.headers['x-amz-request-id'] = requestId;
  return outcome;
}
