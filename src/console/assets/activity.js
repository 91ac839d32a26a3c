// Live activity: what happens now (the event stream) above what happened
// (the write log, one page at a time: never the whole log), both filtered
// by agent, bucket, key prefix and outcome.
import { agentLink, badge, etag, failure, h, json, objectLink, routeParams, table, time } from './dom.js';
import { subscribe } from './events.js';

const OUTCOMES = ['write', 'delete', 'refused', 'merge', 'retry'];
/** Rows the live table keeps; older ones are in the history below. */
const LIVE_ROWS = 200;
/** Least time between two draws of the live table. */
const DRAW_MS = 250;
/** The live view asks the stream for its newest records every SAMPLE_MS, not every record (events/stream.ts `?sample=`). */
const SAMPLE_MS = 250;

function filtersForm(filters) {
  const field = (name, label, attrs = {}) => h('div', { class: 'field' }, h('label', { for: `f-${name}` }, label), h('input', { id: `f-${name}`, name, value: filters[name] ?? '', spellcheck: 'false', autocapitalize: 'off', ...attrs }));
  const outcome = h('select', { id: 'f-outcome', name: 'outcome' }, h('option', { value: '' }, 'any'), OUTCOMES.map((o) => h('option', { value: o, selected: filters.outcome === o }, o)));
  return h('form', {
    class: 'filters', role: 'search', 'aria-label': 'Filter activity',
    onsubmit: (event) => {
      event.preventDefault();
      const data = new FormData(event.target);
      const query = new URLSearchParams([...data].filter(([, v]) => v !== ''));
      location.hash = `#/activity${query.size ? `?${query}` : ''}`;
    },
  },
  field('agent', 'Agent'), field('bucket', 'Bucket'), field('prefix', 'Key prefix'),
  h('div', { class: 'field' }, h('label', { for: 'f-outcome' }, 'Outcome'), outcome),
  h('button', { type: 'submit' }, 'Filter'),
  h('a', { href: '#/activity', class: 'button-link' }, 'Clear'));
}

function who(row) {
  return row.agent ? agentLink(row.agent) : h('span', { class: 'muted', title: 'a request without an agent' }, row.accessKey ?? 'person');
}

function liveRow(row) {
  return h('tr', { class: `row-${row.outcome}` },
    h('td', {}, time(row.at)),
    h('td', {}, badge(row.outcome)),
    h('td', {}, who(row)),
    h('td', {}, objectLink(row.bucket, row.key)),
    h('td', {}, row.reason ? h('span', {}, `${row.status ?? ''} ${row.reason}`) : h('span', { class: 'muted' }, row.eventName)),
    // A refusal wrote nothing: what stands is the current version.
    h('td', {}, row.outcome === 'refused' ? [h('span', { class: 'muted' }, 'current '), etag(row.currentETag)] : [etag(row.previousETag), ' → ', etag(row.newETag)]));
}

function historyRow(row) {
  return h('tr', { class: `row-${row.outcome}${row.changeset ? ' in-changeset' : ''}`, 'data-changeset': row.changeset },
    h('td', {}, time(row.at)),
    h('td', {}, badge(row.outcome)),
    h('td', {}, who(row)),
    h('td', {}, objectLink(row.bucket, row.key)),
    h('td', {}, row.operation),
    h('td', {}, etag(row.previousETag), ' → ', etag(row.newETag)));
}

/**
 * Write-log rows with the entries of one changeset (src/changesets/) under a
 * heading of their own, at the place of its newest entry: they landed
 * together, and `casket rollback --changeset` undoes them together. (Other
 * writes can land between a changeset's entries, which are applied several
 * at a time: the page gathers them.)
 */
function groupedRows(writes) {
  const members = new Map();
  for (const row of writes) if (row.changeset) members.set(row.changeset, [...(members.get(row.changeset) ?? []), row]);
  const out = [];
  for (const row of writes) {
    if (!row.changeset) {
      out.push(historyRow(row));
      continue;
    }
    const group = members.get(row.changeset);
    if (!group) continue; // drawn with its heading already
    members.delete(row.changeset);
    out.push(h('tr', { class: 'changeset-head', 'data-changeset': row.changeset },
      h('td', { colspan: 6 }, 'Changeset ', h('code', { title: row.changeset }, row.changeset.slice(0, 8)), ` · ${group.length} ${group.length === 1 ? 'entry' : 'entries'} on this page, landed together`)));
    out.push(...group.map(historyRow));
  }
  return out;
}

export function activityView(main) {
  const params = routeParams();
  const filters = Object.fromEntries(['agent', 'bucket', 'prefix', 'outcome'].map((n) => [n, params.get(n) ?? '']));
  const matches = (row) => (!filters.agent || row.agent === filters.agent) && (!filters.outcome || row.outcome === filters.outcome);

  const status = h('p', { class: 'status', role: 'status' }, 'Connecting to the event stream…');
  const liveBody = h('tbody', { id: 'live-rows' }, h('tr', { class: 'empty' }, h('td', { colspan: 6, class: 'muted' }, 'Waiting for writes, deletes and refusals…')));
  const live = h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Live events' },
    h('table', { id: 'live' }, h('caption', {}, 'As it happens'),
      h('thead', {}, h('tr', {}, ['Time', 'Outcome', 'Who', 'Object', 'Event', 'Versions'].map((x) => h('th', { scope: 'col' }, x)))), liveBody));
  const history = h('section', { 'aria-labelledby': 'history-title' }, h('h2', { id: 'history-title' }, 'Write log'));
  main.append(h('h1', {}, 'Live activity'), filtersForm(filters), h('section', { 'aria-labelledby': 'live-title' }, h('h2', { id: 'live-title' }, 'Live'), status, live), history);

  // Rows are drawn at most once per DRAW_MS, the newest LIVE_ROWS of what
  // arrived since: at thousands of writes a second a row per event kept the
  // browser drawing what nobody can read, on the cores casket runs on.
  let arrived = [];
  let drawing;
  const draw = () => {
    drawing = undefined;
    const rows = arrived.slice(-LIVE_ROWS).reverse().map(liveRow);
    arrived = [];
    liveBody.querySelector('tr.empty')?.remove();
    liveBody.prepend(...rows);
    while (liveBody.rows.length > LIVE_ROWS) liveBody.lastElementChild.remove();
  };
  let skipped = 0;
  const skippedNote = h('p', { class: 'muted', id: 'live-skipped', hidden: true });
  live.before(skippedNote);
  const subscribed = subscribe({ ...filters, sample: SAMPLE_MS }, (row) => {
    if (!matches(row)) return;
    arrived.push(row);
    if (arrived.length > LIVE_ROWS * 2) arrived = arrived.slice(-LIVE_ROWS);
    drawing ??= setTimeout(() => requestAnimationFrame(draw), DRAW_MS);
  }, (state) => {
    status.textContent = { live: 'Live: new events appear at the top.', reconnecting: 'Reconnecting to the event stream…', unavailable: 'The event stream is unavailable; the write log below still answers.' }[state];
    status.dataset.state = state;
  }, (count) => {
    skipped += count;
    skippedNote.hidden = false;
    skippedNote.textContent = `Busy: ${skipped.toLocaleString()} events not shown here (the newest are); the write log below has every write.`;
  });

  // Paging: a stack of cursors, so Newer goes back exactly.
  const cursors = [];
  const load = async (before) => {
    const page = h('div', { class: 'page' }, h('p', { class: 'muted' }, 'Loading…'));
    history.querySelector('.page')?.replaceWith(page);
    if (!history.querySelector('.page')) history.append(page);
    try {
      const outcome = filters.outcome === 'write' || filters.outcome === 'delete' ? filters.outcome : undefined;
      const started = performance.now();
      const body = await json('activity', { agent: filters.agent, bucket: filters.bucket, prefix: filters.prefix, outcome, before, limit: 50 });
      const rows = (filters.outcome && !outcome) ? [] : groupedRows(body.writes);
      const nav = h('div', { class: 'pager' },
        h('button', { type: 'button', disabled: cursors.length === 0, onclick: () => { cursors.pop(); load(cursors.at(-1)); } }, '← Newer'),
        h('button', { type: 'button', disabled: !body.next, id: 'older', onclick: () => { cursors.push(body.next); load(body.next); } }, 'Older →'),
        h('span', { class: 'muted' }, `page ${cursors.length + 1} · ${Math.round(performance.now() - started)} ms`));
      page.replaceChildren(table('Writes and deletes, newest first', ['Time', 'Outcome', 'Who', 'Object', 'Operation', 'Versions'], rows, (filters.outcome && !outcome) ? 'The write log holds writes and deletes; refusals, merges and retries are in the live view above.' : 'No writes match.'), nav);
    } catch (error) {
      page.replaceChildren(failure(error));
    }
  };
  load(undefined);
  return () => {
    clearTimeout(drawing);
    subscribed();
  };
}
