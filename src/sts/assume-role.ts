/**
 * STS AssumeRole on casket's own endpoint (docs/design.md §7): the AWS STS Query API,
 * so `STSClient` (JS) and `boto3.client("sts")` pointed at casket mint
 * short-lived credentials bound to an agent.
 *
 * Specs followed:
 * - Query API: `POST /` with an application/x-www-form-urlencoded body
 *   `Action=AssumeRole&Version=2011-06-15&...`, SigV4 with service `sts`,
 *   https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html
 *   and .../CommonParameters.html
 * - Response and error XML (namespace https://sts.amazonaws.com/doc/2011-06-15/,
 *   `<ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>`),
 *   .../CommonErrors.html
 * - DurationSeconds 900 s (configurable lower bound, --sts-min-duration) to
 *   43200 s, default 3600; RoleSessionName 2–64 of [\w+=,.@-]; an inline
 *   session Policy of at most 2048 characters narrows the caller's rights.
 *
 * casket's own rules: RoleArn is `arn:casket:iam::agent/<name>` and binds
 * the credential to that agent; the caller needs an admin key or a policy that
 * allows `sts:AssumeRole` on that ARN. The minted credential's rights are the
 * caller's policy (none for an admin: full S3 rights) ∩ the session policy.
 *
 * Known gaps: PolicyArns, Tags, TransitiveTagKeys, ExternalId, SerialNumber,
 * TokenCode, SourceIdentity are ignored; no other STS action is served
 * (InvalidAction); the request body is at most 64 KiB.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { CredentialLookup } from '../auth/credentials.js';
import { evaluateAll, parsePolicy, PolicyError, type Policy } from '../auth/policy.js';
import { newSessionKeys, sessionRequest, withSession } from '../auth/sessions.js';
import { verifySigV4 } from '../auth/sigv4.js';
import type { Logger } from '../log.js';
import type { StateStore } from '../state/types.js';
import { isS3Error, type S3Error } from '../vocabulary/errors.js';
import { toXml } from '../vocabulary/xml.js';

export const STS_XMLNS = 'https://sts.amazonaws.com/doc/2011-06-15/';
const ROLE_ARN = /^arn:casket:iam::agent\/([\x21-\x7e]{1,128})$/;
const SESSION_NAME = /^[\w+=,.@-]{2,64}$/;
const MAX_DURATION = 43_200;
const MAX_BODY = 64 * 1024;
const MAX_SESSION_POLICY = 2048;

export interface StsOptions {
  lookup: CredentialLookup;
  /** Shortest DurationSeconds accepted (AWS: 900). */
  minDurationSeconds: number;
}

export interface StsRequest {
  method: string;
  rawPath: string;
  rawQuery: string;
  headers: Record<string, string>;
  body: Readable;
}

export interface StsResult {
  status: number;
  headers: Record<string, string>;
  body: string;
  accessKey?: string;
  /** The STS error code of a refusal (for the request log). */
  errorCode?: string;
  /** sts:AssumeRole refused by the caller's policy: logged and counted like any policy refusal. */
  denial?: { action: string; resource: string; reason: 'explicit-deny' | 'no-allow' };
  internal?: unknown;
}

class StsError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A form POST to the root: what every STS client sends. */
export function isStsRequest(method: string, rawPath: string, rawQuery: string, headers: Record<string, string>): boolean {
  return method === 'POST' && (rawPath === '/' || rawPath === '') && rawQuery === '' && (headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
}

/** STS names some of S3's signature errors differently (CommonErrors.html). */
function fromS3(e: S3Error): StsError {
  switch (e.code) {
    case 'InvalidAccessKeyId':
      return new StsError('InvalidClientTokenId', 403, 'The security token included in the request is invalid.');
    case 'ExpiredToken':
      return new StsError('ExpiredToken', 400, 'The security token included in the request is expired');
    case 'AuthorizationHeaderMalformed':
      return new StsError('IncompleteSignature', 400, e.message);
    default:
      return new StsError(e.code, e.status, e.message);
  }
}

async function readBody(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new StsError('ValidationError', 400, 'The request body is larger than casket accepts for STS (64 KiB).');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function errorXml(e: StsError, requestId: string): string {
  return toXml('ErrorResponse', { '@_xmlns': STS_XMLNS, Error: { Type: e.status >= 500 ? 'Receiver' : 'Sender', Code: e.code, Message: e.message }, RequestId: requestId }, false);
}

export async function assumeRole(req: StsRequest, state: StateStore, options: StsOptions, log: Pick<Logger, 'info'>, requestId: string, now = new Date()): Promise<StsResult> {
  const result: StsResult = { status: 500, headers: { 'content-type': 'text/xml', 'x-amzn-requestid': requestId }, body: '' };
  try {
    const body = await readBody(req.body);
    const signed = { method: req.method, rawPath: req.rawPath, rawQuery: req.rawQuery, headers: req.headers };
    const pending = sessionRequest(options.lookup, req.headers, req.rawQuery);
    const lookup = pending ? await withSession(options.lookup, state, pending, now.getTime()) : options.lookup;
    const auth = verifySigV4(signed, lookup, now, { service: 'sts', payloadSha256: createHash('sha256').update(body).digest('hex') });
    if (!auth) throw new StsError('MissingAuthenticationToken', 403, 'Request is missing Authentication Token');
    const caller = auth.credential;
    result.accessKey = caller.accessKeyId;

    const params = new URLSearchParams(body.toString('utf8'));
    const action = params.get('Action');
    if (action !== 'AssumeRole') throw new StsError('InvalidAction', 400, `Could not find operation ${action ?? ''} for version ${params.get('Version') ?? ''}`);
    if (params.get('Version') !== '2011-06-15') throw new StsError('InvalidAction', 400, `Could not find operation AssumeRole for version ${params.get('Version') ?? ''}`);

    const roleArn = params.get('RoleArn') ?? '';
    const agent = ROLE_ARN.exec(roleArn)?.[1];
    if (!agent) throw new StsError('ValidationError', 400, `RoleArn "${roleArn}" is not arn:casket:iam::agent/<agent name>`);
    const sessionName = params.get('RoleSessionName') ?? '';
    if (!SESSION_NAME.test(sessionName)) throw new StsError('ValidationError', 400, "1 validation error detected: Value at 'roleSessionName' failed to satisfy constraint: Member must have length between 2 and 64 and match [\\w+=,.@-]*");
    const durationText = params.get('DurationSeconds') ?? '3600';
    const duration = Number(durationText);
    if (!/^\d+$/.test(durationText) || duration < options.minDurationSeconds || duration > MAX_DURATION) {
      throw new StsError('ValidationError', 400, `1 validation error detected: Value '${durationText}' at 'durationSeconds' failed to satisfy constraint: Member must have value between ${options.minDurationSeconds} and ${MAX_DURATION}`);
    }
    let sessionPolicy: Policy | undefined;
    const policyText = params.get('Policy');
    if (policyText !== null) {
      if (policyText.length > MAX_SESSION_POLICY) throw new StsError('PackedPolicyTooLarge', 400, `The session policy is ${policyText.length} characters; at most ${MAX_SESSION_POLICY}.`);
      try {
        sessionPolicy = parsePolicy(JSON.parse(policyText));
      } catch (e) {
        if (e instanceof PolicyError || e instanceof SyntaxError) throw new StsError('MalformedPolicyDocument', 400, `The session policy is not valid: ${e.message}`);
        throw e;
      }
    }

    const callerPolicies = caller.policies ?? [];
    if (!caller.admin) {
      const decision = callerPolicies.length === 0 ? 'implicit-deny' : evaluateAll(callerPolicies, { action: 'sts:AssumeRole', resource: roleArn });
      if (decision !== 'allow') {
        result.denial = { action: 'sts:AssumeRole', resource: roleArn, reason: decision === 'explicit-deny' ? 'explicit-deny' : 'no-allow' };
        const because = decision === 'explicit-deny' ? 'with an explicit deny in a policy' : 'because no policy allows the sts:AssumeRole action';
        throw new StsError('AccessDenied', 403, `User: ${caller.agent !== undefined ? `agent/${caller.agent}` : caller.accessKeyId} is not authorized to perform: sts:AssumeRole on resource: ${roleArn} ${because}`);
      }
    }

    const keys = newSessionKeys();
    const expiresAt = Math.floor(now.getTime() / 1000) * 1000 + duration * 1000;
    const policies: Policy[] = [...callerPolicies, ...(sessionPolicy ? [sessionPolicy] : [])];
    await state.putSession({ ...keys, agent, sessionName, expiresAt, issuedBy: caller.accessKeyId, policies });
    const expiration = new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z');
    log.info({ requestId, issuedBy: caller.accessKeyId, accessKeyId: keys.accessKeyId, agent, sessionName, expiration, narrowed: sessionPolicy !== undefined }, 'session credential minted');
    result.status = 200;
    result.body = toXml(
      'AssumeRoleResponse',
      {
        '@_xmlns': STS_XMLNS,
        AssumeRoleResult: {
          Credentials: { AccessKeyId: keys.accessKeyId, SecretAccessKey: keys.secretAccessKey, SessionToken: keys.sessionToken, Expiration: expiration },
          AssumedRoleUser: { AssumedRoleId: `${keys.accessKeyId}:${sessionName}`, Arn: `arn:casket:sts::assumed-role/agent/${agent}/${sessionName}` },
          ...(policyText !== null && { PackedPolicySize: Math.ceil((policyText.length * 100) / MAX_SESSION_POLICY) }),
        },
        ResponseMetadata: { RequestId: requestId },
      },
      false,
    );
  } catch (e) {
    let err: StsError;
    if (e instanceof StsError) err = e;
    else if (isS3Error(e)) err = fromS3(e);
    else {
      err = new StsError('InternalFailure', 500, 'The request processing has failed because of an unknown error.');
      result.internal = e;
    }
    result.status = err.status;
    result.errorCode = err.code;
    result.body = errorXml(err, requestId);
  }
  return result;
}
