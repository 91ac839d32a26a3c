/**
 * Credentials casket issues to its clients (never the upstream's).
 *
 * Spec: AWS Signature Version 4 signs with an access key ID and a secret
 * access key, https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html
 * casket adds two bindings of its own (docs/design.md §4): a key may be bound to an
 * agent, and a key may be an admin key (introspection endpoints).
 *
 * A credential may carry IAM-style policies (auth/policy.ts, docs/design.md §7): a
 * request must pass every one (a minted session: the caller's policy and the
 * session policy). None at all: full rights.
 */
import type { Policy } from './policy.js';

export interface Credential {
  accessKeyId: string;
  secretAccessKey: string;
  /** The agent this key is bound to: requests signed with it are that agent's. */
  agent?: string;
  admin?: boolean;
  /** Every one must allow a request; absent or empty: no restriction (docs/design.md §7). */
  policies?: readonly Policy[];
}

/** Finds the credential for an access key ID; undefined when casket never issued it. */
export type CredentialLookup = (accessKeyId: string) => Credential | undefined;

/** A lookup over a fixed list of credentials (config file, tests). */
export function staticCredentials(credentials: readonly Credential[]): CredentialLookup {
  const byKey = new Map(credentials.map((c) => [c.accessKeyId, c] as const));
  return (accessKeyId) => byKey.get(accessKeyId);
}
