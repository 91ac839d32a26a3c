// An object: its current version, the versions casket's write log knows
// (who wrote each, when; whether casket retained its content), the diff
// between any two (unified or side by side), and the refusals on it.
import { agentLink, api, badge, etag, failure, h, json, routeParams, table, time } from './dom.js';
import { sideBySide, unified } from './diff-view.js';
import { subscribe } from './events.js';

function lookupForm(bucket, key) {
  return h('form', {
    class: 'filters', role: 'search', 'aria-label': 'Open an object',
    onsubmit: (event) => {
      event.preventDefault();
      const data = new FormData(event.target);
      location.hash = `#/object?${new URLSearchParams({ bucket: data.get('bucket'), key: data.get('key') })}`;
    },
  },
  h('div', { class: 'field' }, h('label', { for: 'o-bucket' }, 'Bucket'), h('input', { id: 'o-bucket', name: 'bucket', value: bucket, required: true, spellcheck: 'false', autocapitalize: 'off' })),
  h('div', { class: 'field wide' }, h('label', { for: 'o-key' }, 'Key'), h('input', { id: 'o-key', name: 'key', value: key, required: true, spellcheck: 'false', autocapitalize: 'off' })),
  h('button', { type: 'submit' }, 'Open'));
}

function versionLabel(v) {
  return `${v.newETag.replace(/"/g, '').slice(0, 8)}… by ${v.agent ?? v.accessKey ?? 'a person'}, ${new Date(v.at).toLocaleString(undefined, { hour12: false })}`;
}

export function objectView(main) {
  const params = routeParams();
  const bucket = params.get('bucket') ?? '';
  const key = params.get('key') ?? '';
  main.append(h('h1', {}, 'Object'), lookupForm(bucket, key));
  if (!bucket || !key) {
    main.append(h('p', { class: 'muted' }, 'Open an object by bucket and key, or follow an object link from the other views.'));
    return () => {};
  }
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  main.append(body);
  const refusedBody = h('tbody', {}, h('tr', { class: 'empty' }, h('td', { colspan: 4, class: 'muted' }, 'None in the event log.')));
  let close = () => {};
  let closed = false;
  (async () => {
    try {
      const o = await json('object', { bucket, key });
      // The refusals the event log still keeps, then new ones as they come: only this key's refusals travel.
      if (!closed) close = subscribe({ bucket, prefix: key, event: 'casket:WriteRefused', lastEventId: o.refusalsFrom }, (row) => {
        if (row.key !== key || row.outcome !== 'refused') return;
        refusedBody.querySelector('tr.empty')?.remove();
        refusedBody.prepend(h('tr', {}, h('td', {}, time(row.at)), h('td', {}, agentLink(row.agent)), h('td', {}, String(row.status ?? '')), h('td', {}, row.reason ?? '')));
      }, () => {});
      const rows = o.versions.map((v) => h('tr', { class: `row-${v.outcome}` },
        h('td', {}, time(v.at)),
        h('td', {}, badge(v.outcome)),
        h('td', {}, v.agent ? agentLink(v.agent) : h('span', { class: 'muted' }, v.accessKey ?? 'person')),
        h('td', {}, v.operation),
        h('td', {}, etag(v.previousETag), ' → ', etag(v.newETag)),
        h('td', {}, v.retained ? 'retained' : h('span', { class: 'muted' }, 'not kept'))));
      const current = o.current
        ? h('dl', { class: 'facts' },
          h('dt', {}, 'Current ETag'), h('dd', {}, h('code', { class: 'etag-full' }, o.current.etag)),
          h('dt', {}, 'Size'), h('dd', {}, `${o.current.size.toLocaleString()} bytes`),
          h('dt', {}, 'Last modified'), h('dd', {}, time(o.current.lastModified)),
          h('dt', {}, 'Written by'), h('dd', {}, o.current.writer ? agentLink(o.current.writer) : h('span', { class: 'muted' }, 'a person or unknown')))
        : h('p', { class: 'muted' }, 'The key does not exist now.');
      const diffable = o.versions.filter((v) => v.newETag && v.retained);
      const options = (selected) => [
        ...(o.current ? [h('option', { value: 'current', selected: selected === 'current' }, 'current version')] : []),
        ...diffable.map((v) => h('option', { value: v.newETag, selected: selected === v.newETag }, versionLabel(v))),
      ];
      const from = h('select', { id: 'diff-from', name: 'from' }, options(diffable[1]?.newETag ?? diffable[0]?.newETag));
      const to = h('select', { id: 'diff-to', name: 'to' }, options('current'));
      const output = h('div', { class: 'diff-output', 'aria-live': 'polite' });
      let mode = 'unified';
      let lastText = '';
      const modeButtons = ['unified', 'side by side'].map((m) => h('button', {
        type: 'button', 'aria-pressed': String(m === mode), 'data-mode': m,
        onclick: (event) => {
          mode = m;
          for (const b of modeButtons) b.setAttribute('aria-pressed', String(b === event.currentTarget));
          render();
        },
      }, m));
      const render = () => output.replaceChildren(lastText === '' ? h('p', { class: 'muted' }, 'The two versions are the same.') : mode === 'unified' ? unified(lastText) : sideBySide(lastText));
      const show = async (event) => {
        event?.preventDefault();
        output.replaceChildren(h('p', { class: 'muted' }, 'Loading the diff…'));
        const res = await api('diff', { bucket, key, from: from.value, to: to.value });
        const text = await res.text();
        if (!res.ok) {
          let message = text;
          try { message = JSON.parse(text).message ?? message; } catch { /* plain text */ }
          output.replaceChildren(h('p', { class: 'message', role: 'alert' }, message));
          return;
        }
        lastText = (res.headers.get('content-type') ?? '').includes('json') ? JSON.stringify(JSON.parse(text), null, 2) : text;
        render();
      };
      const diffForm = h('form', { class: 'filters', onsubmit: show, 'aria-label': 'Compare two versions' },
        h('div', { class: 'field wide' }, h('label', { for: 'diff-from' }, 'From'), from),
        h('div', { class: 'field wide' }, h('label', { for: 'diff-to' }, 'To'), to),
        h('button', { type: 'submit' }, 'Show diff'),
        h('div', { class: 'toggle', role: 'group', 'aria-label': 'Diff layout' }, modeButtons));
      body.replaceChildren(
        h('h2', {}, `${bucket}/${key}`), current,
        table('Versions (write log, newest first)', ['Time', 'Outcome', 'Who', 'Operation', 'Versions', 'Content'], rows, 'casket has no write of this key in its log.'),
        table('Versions the bucket holds (S3 versioning), newest first', ['Version id', 'Last modified', 'Written by', 'ETag', 'Size'], (o.held ?? []).map((v) => h('tr', { class: v.isLatest ? 'row-current' : '' },
          h('td', {}, h('code', {}, v.versionId), v.isLatest ? ' (current)' : ''),
          h('td', {}, time(v.lastModified)),
          h('td', {}, v.writer ? agentLink(v.writer) : h('span', { class: 'muted' }, 'a person or unknown')),
          h('td', {}, v.deleteMarker ? badge('delete marker') : etag(v.etag)),
          h('td', {}, v.deleteMarker ? '' : `${v.size.toLocaleString()} bytes`))), 'The bucket keeps no other version (versioning is off).'),
        h('section', { 'aria-labelledby': 'diff-title' }, h('h2', { id: 'diff-title' }, 'Diff'),
          diffable.length === 0 && !o.current ? h('p', { class: 'muted' }, 'No version of this key is retained.') : diffForm, output),
        h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Refusals on this object' },
          h('table', { id: 'object-refusals' }, h('caption', {}, 'Refusals on this object (412/428), newest first'), h('thead', {}, h('tr', {}, ['Time', 'Agent', 'Status', 'Reason'].map((x) => h('th', { scope: 'col' }, x)))), refusedBody)));
      if (diffable.length > 0 && o.current) await show();
    } catch (error) {
      body.replaceChildren(failure(error));
    }
  })();
  return () => {
    closed = true;
    close();
  };
}
