/**
 * The console's "Connected clients" view (issue 40 item 3): the MCP clients
 * a login and consent let in (src/oauth/grants.ts), and Revoke.
 *
 * Who sees what follows the credential the console session stands for: an
 * admin key sees and revokes every grant; any other key only the grants made
 * with it (its own logins). A grant someone may not see is answered exactly
 * as one that does not exist (404 NoSuchGrant), so ids cannot be probed.
 *
 * Revoking deletes the grant from the shared state store, so:
 *  - its refresh token is refused at once on every replica (redeem finds no
 *    grant: grants.ts);
 *  - its access tokens end as the MCP endpoint's bearer check decides: the
 *    token names its grant (`gid`, src/oauth/access-token.ts), and a token
 *    whose grant is gone is refused at its next request; at the latest it
 *    expires ACCESS_TOKEN_SECONDS after it was minted.
 * Never a secret: a grant shows its client, agent, access key id and times;
 * the store holds only hashes of its code and refresh token anyway.
 */
import type { Credential } from '../auth/credentials.js';
import type { OAuthGrant, StateStore } from '../state/types.js';

export interface ConnectedClient {
  id: string;
  clientName: string;
  clientId: string;
  agent: string | null;
  accessKey: string;
  created: string;
  /** When the client last redeemed its code or refreshed: an access token lives 5 minutes, so a client in use refreshes that often. */
  lastUsed: string;
  /** 'authorizing': consented, its code not yet redeemed; 'connected': it holds a refresh token. */
  state: 'authorizing' | 'connected';
}

/** Whether this credential may see and revoke the grant. */
export function mayManage(credential: Credential, grant: OAuthGrant): boolean {
  return credential.admin === true || grant.accessKeyId === credential.accessKeyId;
}

function row(g: OAuthGrant): ConnectedClient {
  return {
    id: g.id,
    clientName: g.clientName,
    clientId: g.clientId,
    agent: g.agent ?? null,
    accessKey: g.accessKeyId,
    created: new Date(g.createdAt).toISOString(),
    lastUsed: new Date(g.lastUsedAt).toISOString(),
    state: g.pendingCode ? 'authorizing' : 'connected',
  };
}

/** The grants this credential may see, most recently used first (the store lists no expired grant: state/types.ts). */
export async function connectedClients(state: Pick<StateStore, 'listOAuthGrants'>, credential: Credential) {
  const grants = (await state.listOAuthGrants()).filter((g) => mayManage(credential, g));
  grants.sort((a, b) => b.lastUsedAt - a.lastUsedAt);
  return { clients: grants.map(row) };
}

export type Revoked = { ok: true; grant: OAuthGrant } | { ok: false; status: 404 };

/** Deletes the grant when this credential may manage it; otherwise, and when there is none, 404. */
export async function revokeConnectedClient(state: Pick<StateStore, 'getOAuthGrant' | 'deleteOAuthGrant'>, credential: Credential, id: string): Promise<Revoked> {
  // Stryker disable next-line ConditionalExpression,StringLiteral: a shortcut only; no store holds a grant whose id is empty (ids are random, src/oauth/grants.ts), so asking it answers the same
  const grant = id === '' ? undefined : await state.getOAuthGrant(id);
  if (!grant || !mayManage(credential, grant)) return { ok: false, status: 404 };
  // Deleted concurrently (another revoke, a replayed refresh token): gone either way.
  await state.deleteOAuthGrant(grant.id);
  return { ok: true, grant };
}
