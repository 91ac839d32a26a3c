/**
 * Who sees and revokes which connected client (src/console/connected-clients.ts
 * mayManage), against a real state store: an admin key every grant, any other
 * key only the grants made with it, and a grant it may not manage is answered
 * as one that does not exist — and stays. The console admits admin sessions
 * only today (session.ts), so this is the rule a non-admin caller of the
 * module gets, held here rather than through a page that cannot reach it.
 */
import { describe, expect, it } from 'vitest';
import type { Credential } from '../../src/auth/credentials.js';
import { connectedClients, revokeConnectedClient } from '../../src/console/connected-clients.js';
import { MemoryStateStore } from '../../src/state/memory.js';
import type { OAuthGrant } from '../../src/state/types.js';

const admin: Credential = { accessKeyId: 'ADMINKEY', secretAccessKey: 'a', admin: true };
const person: Credential = { accessKeyId: 'PERSONKEY', secretAccessKey: 'p' };
const other: Credential = { accessKeyId: 'OTHERKEY', secretAccessKey: 'o' };

function grant(id: string, accessKeyId: string, lastUsedAt: number): OAuthGrant {
  const now = Date.now();
  return {
    id, clientId: `client-${id}`, clientName: `Client ${id}`, redirectUri: 'http://127.0.0.1:9/callback', accessKeyId,
    resource: 'http://127.0.0.1:9/_casket/mcp', codeChallenge: 'x', secretHash: 'x', pendingCode: false,
    createdAt: now - 60_000, lastUsedAt: now - 60_000 + lastUsedAt, expiresAt: now + 3_600_000,
  };
}

async function storeWithGrants(): Promise<MemoryStateStore> {
  const state = new MemoryStateStore();
  await state.putOAuthGrant(grant('mine-old', person.accessKeyId, 1));
  await state.putOAuthGrant(grant('theirs', other.accessKeyId, 2));
  await state.putOAuthGrant(grant('mine-new', person.accessKeyId, 3));
  await state.putOAuthGrant(grant('admins', admin.accessKeyId, 4));
  return state;
}

describe('connected clients: which grants a credential manages', () => {
  it('an admin key lists every grant, a key that is not admin only its own, most recently used first', async () => {
    const state = await storeWithGrants();
    expect((await connectedClients(state, admin)).clients.map((c) => c.id)).toEqual(['admins', 'mine-new', 'theirs', 'mine-old']);
    expect((await connectedClients(state, person)).clients.map((c) => c.id)).toEqual(['mine-new', 'mine-old']);
    expect((await connectedClients(state, { accessKeyId: 'NOGRANTS', secretAccessKey: 'n' })).clients).toEqual([]);
  });

  it('a key that is not admin revokes its own grant, and another key\'s grant is answered as missing and kept', async () => {
    const state = await storeWithGrants();
    expect(await revokeConnectedClient(state, person, 'theirs')).toEqual({ ok: false, status: 404 });
    expect(await state.getOAuthGrant('theirs')).toBeDefined();
    const own = await revokeConnectedClient(state, person, 'mine-old');
    expect(own.ok && own.grant.id).toBe('mine-old');
    expect(await state.getOAuthGrant('mine-old')).toBeUndefined();
    expect(await revokeConnectedClient(state, person, 'mine-old')).toEqual({ ok: false, status: 404 });
    // An admin key manages anyone's.
    expect((await revokeConnectedClient(state, admin, 'theirs')).ok).toBe(true);
    expect((await connectedClients(state, admin)).clients.map((c) => c.id)).toEqual(['admins', 'mine-new']);
  });
});
