// The console's entry: a hash router over five views. Each view fills <main>
// and may return a function that stops what it started (an event stream).
import { activityView } from './activity.js';
import { agentView, agentsView } from './agents.js';
import { connectedClientsView } from './connected-clients.js';
import { objectView } from './object.js';
import { setupView } from './setup.js';

const main = document.getElementById('main');
let stop = () => {};
/** Which route is current: a view that finishes loading after the next route began stops at once. */
let generation = 0;

async function route() {
  stop();
  stop = () => {};
  const mine = ++generation;
  const path = (location.hash.replace(/^#/, '') || '/activity').split('?')[0];
  const [, view, arg] = path.split('/');
  // Each route draws into its own box: a slow view that answers after the
  // next route began draws into a box no longer on the page.
  const box = document.createElement('div');
  main.replaceChildren(box);
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === (view || 'activity')) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${{ activity: 'Live activity', agents: 'Agents', object: 'Object', clients: 'Connected clients', setup: 'Setup' }[view] ?? 'Live activity'} · casket console`;
  let result;
  if (view === 'agents' && arg) result = await agentView(box, decodeURIComponent(arg));
  else if (view === 'agents') result = await agentsView(box);
  else if (view === 'object') result = objectView(box);
  else if (view === 'clients') result = await connectedClientsView(box);
  else if (view === 'setup') result = await setupView(box);
  else result = activityView(box);
  if (typeof result !== 'function') return;
  if (mine === generation) stop = result;
  else result();
}

window.addEventListener('hashchange', () => {
  route().then(() => main.focus({ preventScroll: true }));
});
route();
