// Small helpers every view uses: build elements (text only, never HTML, so a
// key or an agent name cannot inject markup), call the console's JSON API,
// and format what casket answers.

/** h('a', {href: '#x', class: 'y'}, 'text', child...) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** GET the console API; a lost session sends the browser to the login form. */
export async function api(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ''));
  const res = await fetch(`/_casket/console/api/${path}${query.size ? `?${query}` : ''}`, { credentials: 'same-origin', headers: { accept: 'application/json' } });
  if (res.status === 401) {
    location.assign('/_casket/console/login');
    throw new Error('not logged in');
  }
  return res;
}

export async function json(path, params) {
  const res = await api(path, params);
  const body = await res.json();
  if (!res.ok) throw new Error(body.message ?? body.error ?? `HTTP ${res.status}`);
  return body;
}

/** An ETag cut to something a person can compare at a glance; the whole one in the title. */
export function etag(value) {
  if (!value) return h('span', { class: 'muted' }, '—');
  const bare = value.replace(/"/g, '');
  return h('code', { title: value, class: 'etag' }, bare.length > 12 ? `${bare.slice(0, 8)}…${bare.slice(-4)}` : bare);
}

export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  return h('time', { datetime: iso, title: d.toISOString() }, d.toLocaleString(undefined, { hour12: false }));
}

export function objectLink(bucket, key) {
  const params = new URLSearchParams({ bucket, key });
  return h('a', { href: `#/object?${params}` }, `${bucket}/${key}`);
}

export function agentLink(agent) {
  return agent ? h('a', { href: `#/agents/${encodeURIComponent(agent)}` }, agent) : h('span', { class: 'muted' }, 'person');
}

export function badge(kind, text = kind) {
  return h('span', { class: `badge badge-${kind}` }, text);
}

export function table(caption, headers, rows, empty = 'Nothing yet.') {
  const body = h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: headers.length, class: 'muted' }, empty)));
  return h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': caption },
    h('table', {}, h('caption', {}, caption), h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))), body));
}

export function failure(error) {
  return h('p', { class: 'message', role: 'alert' }, `Could not load this view: ${error.message}`);
}

/** Query parameters of the hash route, e.g. #/object?bucket=b&key=k. */
export function routeParams() {
  const i = location.hash.indexOf('?');
  return new URLSearchParams(i === -1 ? '' : location.hash.slice(i + 1));
}
