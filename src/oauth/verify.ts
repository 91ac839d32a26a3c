/**
 * An OAuth access token (access-token.ts) at the MCP endpoint, checked on
 * every request (MCP authorization §"Token Handling": the resource server
 * MUST validate the token and that it was issued for it, RFC 8707 §2):
 *
 * - signed with the current secret of the key it names (a removed or
 *   rotated key ends its tokens at once, on every replica);
 * - unexpired, issued by this casket, audience this MCP endpoint;
 * - its grant still in the shared state store, for the same key, agent and
 *   client: revoking a grant (a reused refresh token or code, or the
 *   console's "Connected clients") ends its access tokens at the next
 *   request on every replica, not at their expiry. That is one state-store
 *   read per request (docs/authorization.md gives its cost).
 *
 * The caller is the token's key and agent; the key's policy applies as to
 * any request of that key (mcp-door.ts), never more.
 */
import type { Credential, CredentialLookup } from '../auth/credentials.js';
import { NotAuthenticated } from '../mcp/door.js';
import type { StateStore } from '../state/types.js';
import { accessTokenKeyId, verifyAccessToken } from './access-token.js';
import { resourceUrl } from './metadata.js';

const REFUSED = 'The access token is not valid here: expired, revoked, for another resource, or its key was rotated. The client should refresh it or log in again.';

export async function oauthCaller(token: string, lookup: CredentialLookup, state: Pick<StateStore, 'getOAuthGrant'>, origin: string): Promise<{ credential: Credential; claimed: string | undefined }> {
  const keyId = accessTokenKeyId(token);
  const credential = keyId === undefined ? undefined : lookup(keyId);
  const claims = credential && (await verifyAccessToken(token, credential.secretAccessKey, origin, resourceUrl(origin)));
  if (!credential || !claims || claims.accessKeyId !== credential.accessKeyId) throw new NotAuthenticated(REFUSED);
  const grant = await state.getOAuthGrant(claims.grantId);
  if (!grant || grant.pendingCode || grant.accessKeyId !== claims.accessKeyId || grant.agent !== claims.agent || grant.clientId !== claims.clientId) throw new NotAuthenticated(REFUSED);
  return { credential, claimed: claims.agent };
}
