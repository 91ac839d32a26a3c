/**
 * Enforcing a credential's policies (docs/design.md §7, src/auth/policy.ts) on one
 * request: handle.ts checks what the operation needs (actions.ts) once, after
 * auth and operation detection and before any byte of the body is asked for;
 * DeleteObjects checks each key, ListBuckets filters what it shows.
 *
 * A refusal is 403 AccessDenied in S3 XML, worded as AWS words it ("... is not
 * authorized to perform: s3:GetObject on resource: ... because no
 * identity-based policy allows ...", https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html),
 * and reported (logged with action and resource, counted by reason).
 * Admin keys, anonymous readers and credentials without a policy are never
 * refused here: an entry without a policy keeps full rights.
 */
import type { Credential } from '../auth/credentials.js';
import { evaluateAll, touchesBucket, type Access } from '../auth/policy.js';
import { S3Error } from '../vocabulary/errors.js';

export type DenialReason = 'explicit-deny' | 'no-allow';

export interface Denial {
  action: string;
  resource: string;
  reason: DenialReason;
}

export interface AccessCheck {
  /** Throws AccessDenied (and reports it) unless every policy allows the access. */
  authorize(access: Access): void;
  /** ListBuckets: whether the credential may touch anything in this bucket. */
  bucketVisible(bucket: string): boolean;
  /** Whether every policy allows the access, without refusing or reporting anything (what an answer may show). */
  allows(access: Access): boolean;
}

export const UNRESTRICTED: AccessCheck = { authorize: () => {}, bucketVisible: () => true, allows: () => true };

export function accessDenied(access: Access, reason: DenialReason, who: string): S3Error {
  const because = reason === 'explicit-deny' ? 'with an explicit deny in a policy' : 'because no policy allows the action';
  return new S3Error('AccessDenied', `User: ${who} is not authorized to perform: ${access.action} on resource: "${access.resource}" ${because}`);
}

export function accessFor(credential: Credential | undefined, report: (denial: Denial) => void): AccessCheck {
  const policies = credential?.policies;
  if (!credential || credential.admin || !policies || policies.length === 0) return UNRESTRICTED;
  const who = credential.agent !== undefined ? `agent/${credential.agent}` : credential.accessKeyId;
  return {
    authorize(access) {
      const decision = evaluateAll(policies, access);
      if (decision === 'allow') return;
      const reason: DenialReason = decision === 'explicit-deny' ? 'explicit-deny' : 'no-allow';
      report({ action: access.action, resource: access.resource, reason });
      throw accessDenied(access, reason, who);
    },
    bucketVisible: (bucket) => policies.every((p) => touchesBucket(p, bucket)),
    allows: (access) => evaluateAll(policies, access) === 'allow',
  };
}
