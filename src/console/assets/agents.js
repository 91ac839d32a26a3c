// Agents: who casket knows of, and for one agent its read stamps (full,
// partial, stale: docs/design.md §4), its STS sessions and when they expire,
// its recent writes, and its refusals as they happen.
import { agentLink, badge, etag, failure, h, json, objectLink, table, time } from './dom.js';
import { subscribe } from './events.js';

export async function agentsView(main) {
  main.append(h('h1', {}, 'Agents'));
  try {
    const body = await json('agents');
    const rows = body.agents.map((a) => h('tr', {},
      h('td', {}, agentLink(a.agent)),
      h('td', {}, a.keys.length ? a.keys.map((k) => h('code', {}, k)) : h('span', { class: 'muted' }, 'agent header')),
      h('td', { class: 'num' }, String(a.writes)),
      h('td', {}, time(a.lastWrite))));
    main.append(
      h('p', { class: 'muted' }, `Agents bound to a credential, and those seen in the newest ${body.window.toLocaleString()} writes.`),
      table('Agents', ['Agent', 'Access keys', `Writes (newest ${body.window})`, 'Last write'], rows, 'No agent has written yet.'));
  } catch (error) {
    main.append(failure(error));
  }
}

/** Refusal rows the page keeps; the count says how many the event log holds. */
const SHOWN_REFUSALS = 200;

export async function agentView(main, name) {
  main.append(h('p', { class: 'crumbs' }, h('a', { href: '#/agents' }, 'Agents'), ' / ', name), h('h1', {}, `Agent ${name}`));
  const refusals = { seen: 0, refused: 0, kept: 0 };
  const rate = h('p', { class: 'status', role: 'status' }, 'Refusal rate: waiting for this agent\'s next write…');
  const kept = h('span', {}, '0');
  let close = () => {};
  try {
    const body = await json(`agents/${encodeURIComponent(name)}`);
    const counts = { full: 0, partial: 0, stale: 0 };
    for (const s of body.stamps) counts[s.state]++;
    const stamps = body.stamps.map((s) => h('tr', { class: `row-${s.state}` },
      h('td', {}, objectLink(s.bucket, s.key)),
      h('td', {}, badge(s.state)),
      h('td', {}, etag(s.etag)),
      h('td', {}, etag(s.currentETag), s.currentWriter && s.state === 'stale' ? h('span', { class: 'muted' }, ` by ${s.currentWriter}`) : null),
      h('td', {}, time(s.readAt))));
    const writes = body.writes.map((w) => h('tr', {},
      h('td', {}, time(w.at)), h('td', {}, badge(w.outcome)), h('td', {}, objectLink(w.bucket, w.key)), h('td', {}, w.operation), h('td', {}, etag(w.previousETag), ' → ', etag(w.newETag))));
    const sessions = body.sessions.map((s) => h('tr', {},
      h('td', {}, h('code', {}, s.accessKeyId)), h('td', {}, s.sessionName), h('td', {}, badge(s.state === 'active' ? 'ok' : 'failing', s.state)), h('td', {}, time(s.expiresAt)), h('td', {}, h('code', {}, s.issuedBy))));
    const refusedBody = h('tbody', {}, h('tr', { class: 'empty' }, h('td', { colspan: 4, class: 'muted' }, 'None in the event log.')));
    main.append(
      h('dl', { class: 'facts' },
        h('dt', {}, 'Access keys'), h('dd', {}, body.keys.length ? body.keys.join(', ') : 'none bound (identified by the agent header)'),
        h('dt', {}, 'Read stamps'), h('dd', {}, `${counts.full} full, ${counts.partial} partial, ${counts.stale} stale`),
        h('dt', {}, 'Refusals kept'), h('dd', {}, kept, h('span', { class: 'muted' }, ' in the event log'))),
      rate,
      table('Read stamps: what it last read of each key', ['Object', 'State', 'Read', 'Current', 'Read at'], stamps, 'No read stamps.'),
      table('STS sessions (AssumeRole)', ['Access key ID', 'Session name', 'State', 'Expires', 'Issued by'], sessions, 'No STS session.'),
      table('Recent writes', ['Time', 'Outcome', 'Object', 'Operation', 'Versions'], writes, 'No writes.'),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Refusals' },
        h('table', { id: 'agent-refusals' }, h('caption', {}, 'Refusals (412/428), newest first'), h('thead', {}, h('tr', {}, ['Time', 'Object', 'Status', 'Reason'].map((x) => h('th', { scope: 'col' }, x)))), refusedBody)));
    const refused = (row) => {
      refusedBody.querySelector('tr.empty')?.remove();
      refusedBody.prepend(h('tr', {}, h('td', {}, time(row.at)), h('td', {}, objectLink(row.bucket, row.key)), h('td', {}, String(row.status ?? '')), h('td', {}, row.reason ?? '')));
      while (refusedBody.rows.length > SHOWN_REFUSALS) refusedBody.lastElementChild.remove();
    };
    // Two streams: the refusals the event log keeps (only refusals travel), and everything from now, for the rate.
    const past = subscribe({ event: 'casket:WriteRefused', lastEventId: body.refusalsFrom }, (row) => {
      if (row.agent !== name) return;
      refusals.kept++;
      kept.textContent = refusals.kept.toLocaleString();
      refused(row);
    }, () => {});
    const now = subscribe({}, (row) => {
      if (row.agent !== name) return;
      refusals.seen++;
      if (row.outcome === 'refused') refusals.refused++;
      rate.textContent = `Refusal rate since this page opened: ${refusals.refused} of ${refusals.seen} write attempts (${Math.round((100 * refusals.refused) / refusals.seen)}%).`;
    }, () => {});
    close = () => {
      past();
      now();
    };
  } catch (error) {
    main.append(failure(error));
  }
  return () => close();
}
