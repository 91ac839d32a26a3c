// Setup: what casket runs on and whether it is healthy, read-only. The
// credentials show their access key id, agent, admin flag and policies;
// casket never sends a secret key to this page.
import { badge, failure, h, json, table } from './dom.js';

export async function setupView(main) {
  main.append(h('h1', {}, 'Setup'));
  try {
    const s = await json('setup');
    const checks = Object.entries(s.readiness.checks).map(([name, c]) => h('tr', {}, h('td', {}, name), h('td', {}, badge(c.ok ? 'ok' : 'failing', c.ok ? 'ok' : 'failing')), h('td', {}, c.error ?? '')));
    const caps = s.capabilities ? Object.entries(s.capabilities.capabilities ?? s.capabilities).map(([name, value]) => h('tr', {}, h('td', {}, name), h('td', {}, h('code', {}, JSON.stringify(value))))) : [];
    const creds = s.credentials.map((c) => h('tr', {},
      h('td', {}, h('code', {}, c.accessKeyId)),
      h('td', {}, c.admin ? badge('admin') : ''),
      h('td', {}, c.agent ?? h('span', { class: 'muted' }, '—')),
      h('td', {}, c.policies.length ? h('details', {}, h('summary', {}, `${c.policies.length} ${c.policies.length === 1 ? 'policy' : 'policies'}`), h('pre', {}, JSON.stringify(c.policies, null, 2))) : h('span', { class: 'muted' }, 'full rights'))));
    const figures = (m) => [h('strong', {}, m.total.toLocaleString()), m.by && Object.keys(m.by).length ? h('span', { class: 'muted' }, ` (${Object.entries(m.by).map(([k, v]) => `${k}: ${v}`).join(', ')})`) : null];
    main.append(
      h('section', { 'aria-labelledby': 'health-title' }, h('h2', { id: 'health-title' }, 'Health'),
        h('p', {}, badge(s.readiness.status === 'ready' ? 'ok' : 'failing', s.readiness.status)),
        table('Readiness checks', ['Part', 'State', 'Error'], checks)),
      h('section', { 'aria-labelledby': 'backend-title' }, h('h2', { id: 'backend-title' }, 'Backend and state'),
        h('dl', { class: 'facts' },
          h('dt', {}, 'Backend'), h('dd', {}, s.setup.backend === 'upstream' ? `upstream ${s.setup.upstream}` : 'embedded store'),
          h('dt', {}, 'State store'), h('dd', {}, s.setup.state),
          h('dt', {}, 'Guard'), h('dd', {}, s.setup.guard),
          h('dt', {}, 'Agent header'), h('dd', {}, h('code', {}, s.setup.agentHeader)),
          h('dt', {}, 'Retention budget'), h('dd', {}, `${s.setup.retainBytes.toLocaleString()} bytes`)),
        s.capabilities ? table('Conditional writes the upstream enforces (probed)', ['Capability', 'Probed'], caps) : h('p', { class: 'muted' }, 'The embedded store enforces every condition itself.')),
      h('section', { 'aria-labelledby': 'creds-title' }, h('h2', { id: 'creds-title' }, 'Credentials'),
        table('Credentials (secrets are never shown)', ['Access key ID', 'Admin', 'Agent', 'Policies'], creds)),
      h('section', { 'aria-labelledby': 'metrics-title' }, h('h2', { id: 'metrics-title' }, 'Metrics at a glance'),
        h('dl', { class: 'facts' },
          h('dt', {}, 'Requests'), h('dd', {}, figures(s.metrics.requests)),
          h('dt', {}, 'Refusals (412/428)'), h('dd', {}, figures(s.metrics.refusals)),
          h('dt', {}, 'Access denied'), h('dd', {}, figures(s.metrics.accessDenied)),
          h('dt', {}, 'Bytes in / out'), h('dd', {}, `${s.metrics.bytesReceived.total.toLocaleString()} / ${s.metrics.bytesSent.total.toLocaleString()}`)),
        h('p', {}, h('a', { href: '/_casket/metrics' }, 'All metrics (Prometheus text)'))));
  } catch (error) {
    main.append(failure(error));
  }
}
