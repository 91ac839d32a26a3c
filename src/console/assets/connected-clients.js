// Connected clients: the MCP clients (Claude Code, VS Code, the Inspector…)
// a login and consent let in (issue 40), and Revoke. An admin sees every
// grant; casket answers only what this session's key may manage. Revoking
// ends the client's refresh token at once and its access tokens at their
// next request (docs/authorization.md); the client must log in again.
import { agentLink, badge, failure, h, json, table, time } from './dom.js';

async function revoke(id) {
  // fetch sends Origin on a POST: the server's CSRF check (routes.ts sameOrigin).
  const res = await fetch(`/_casket/console/api/connected-clients/${encodeURIComponent(id)}/revoke`, { method: 'POST', credentials: 'same-origin', headers: { accept: 'application/json' } });
  if (res.status === 401) {
    location.assign('/_casket/console/login');
    throw new Error('not logged in');
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.message ?? body.error ?? `HTTP ${res.status}`);
}

export async function connectedClientsView(main) {
  main.append(h('h1', {}, 'Connected clients'));
  const status = h('p', { class: 'status', role: 'status' });
  const box = h('div');
  main.append(h('p', { class: 'muted' }, 'MCP clients that logged in with a casket credential. Last used is the client\'s last token refresh (a client in use refreshes every 5 minutes). Revoke ends its tokens at their next request: it must log in again.'), status, box);
  const draw = async () => {
    try {
      const body = await json('connected-clients');
      const rows = body.clients.map((c) => h('tr', { 'data-grant': c.id },
        h('td', {}, c.clientName, h('br'), h('code', { class: 'muted', title: c.clientId }, c.clientId.length > 40 ? `${c.clientId.slice(0, 37)}…` : c.clientId)),
        h('td', {}, agentLink(c.agent)),
        h('td', {}, h('code', {}, c.accessKey)),
        h('td', {}, time(c.created)),
        h('td', {}, c.state === 'authorizing' ? badge('partial', 'authorizing') : time(c.lastUsed)),
        h('td', {}, h('button', {
          type: 'button',
          'aria-label': `Revoke ${c.clientName}`,
          onclick: async (event) => {
            event.currentTarget.disabled = true;
            try {
              await revoke(c.id);
              status.textContent = `Revoked ${c.clientName}.`;
            } catch (error) {
              status.textContent = `Could not revoke ${c.clientName}: ${error.message}`;
            }
            await draw();
          },
        }, 'Revoke'))));
      box.replaceChildren(table('Connected clients', ['Client', 'Agent', 'Access key', 'Created', 'Last used', ''], rows, 'No client is connected.'));
    } catch (error) {
      box.replaceChildren(failure(error));
    }
  };
  await draw();
}
