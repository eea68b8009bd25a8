// The page registry: each page is a module exporting mount(el, ctx) and,
// optionally, unmount(). Adding a page is one line here.
import {h} from './api.js';

export const pages = [
  {id: 'sim', title: 'Simulator', load: () => import('./sim.js')},
  {id: 'lifecycle', title: 'Lifecycle', load: () => import('./lifecycle.js')},
  {id: 'lab', title: 'Lab', load: () => import('./lab.js')},
  {id: 'learn', title: 'Learn', load: () => import('./learn.js')},
  {id: 'runs', title: 'Runs', load: () => import('./runs.js')},
];

// ctx is shared between pages: the simulator's settings carry over to the
// lifecycle view.
const ctx = {simParams: null};
let current = null;

function nav() {
  const el = document.getElementById('nav');
  el.replaceChildren(...pages.map(p => h('a', {href: '#' + p.id, id: 'nav-' + p.id}, p.title)));
}

async function route() {
  const [id, ...rest] = location.hash.slice(1).split('/');
  const page = pages.find(p => p.id === id) || pages[0];
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.id === 'nav-' + page.id) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  if (current && current.mod.unmount) current.mod.unmount();
  const main = document.getElementById('page');
  main.replaceChildren();
  main.dataset.page = page.id;
  document.title = page.title + ' · knee ui';
  const mod = await page.load();
  current = {page, mod};
  await mod.mount(main, ctx, rest);
}

nav();
window.addEventListener('hashchange', route);
route();
