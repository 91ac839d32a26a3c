// The console's entry: a hash router over four views. Each view fills <main>
// and may return a function that stops what it started (an event stream).
import { activityView } from './activity.js';
import { agentView, agentsView } from './agents.js';
import { objectView } from './object.js';
import { setupView } from './setup.js';

const main = document.getElementById('main');
let stop = () => {};

async function route() {
  stop();
  stop = () => {};
  const path = (location.hash.replace(/^#/, '') || '/activity').split('?')[0];
  const [, view, arg] = path.split('/');
  main.replaceChildren();
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === (view || 'activity')) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${{ activity: 'Live activity', agents: 'Agents', object: 'Object', setup: 'Setup' }[view] ?? 'Live activity'} · casket console`;
  let result;
  if (view === 'agents' && arg) result = await agentView(main, decodeURIComponent(arg));
  else if (view === 'agents') result = await agentsView(main);
  else if (view === 'object') result = objectView(main);
  else if (view === 'setup') result = await setupView(main);
  else result = activityView(main);
  if (typeof result === 'function') stop = result;
}

window.addEventListener('hashchange', () => {
  route().then(() => main.focus({ preventScroll: true }));
});
route();
