// The viewer's entry module (index.html loads it): the hash router and the top bar. It imports
// the pages; nothing imports it. What the pages share lives in modules of its own, which import
// neither the pages nor this one: dom.js (elements), format.js (numbers, sizes, dims, labels),
// url.js (query strings, link targets), api.js (fetching, the summary). No module imports
// another in a cycle (tests/view/import_cycles_test.py checks it).
//
// A page module exports `render(main, params, ctx)`: it fills `main` (a fresh
// <main id="page" data-page="...">) and calls `ctx.ready()` once its data is drawn. It may
// return a handle object; the router calls `handle.search(q)` (when present) for the top-bar
// search instead of navigating. Everything a page starts must stop when `ctx.signal` aborts
// (it aborts when the user navigates away). `ctx.setHash(hash, {replace})` replaces (or pushes)
// the URL's hash without a navigation, for state the page already shows.

import { ApiError, getSummary } from './api.js';
import { el, errorBox, debounce } from './dom.js';
import { href } from './url.js';
import * as summaryPage from './summary.js';
import * as tensorsPage from './tensors.js';
import * as tensorPage from './tensor.js';
import * as graphPage from './graph.js';
import * as nodePage from './node.js';

const PAGES = { summary: summaryPage, tensors: tensorsPage, tensor: tensorPage, graph: graphPage, node: nodePage };

/** The hash of the current URL, raw (location.hash may come back decoded in some browsers). */
function currentHash() {
  const at = location.href.indexOf('#');
  return at < 0 ? '' : location.href.slice(at + 1);
}

/** {page, params, path} of a hash such as "/tensor/a%2Fb" or "/tensors?sort=bytes". */
function parseRoute(hash) {
  const question = hash.indexOf('?');
  const path = question < 0 ? hash : hash.slice(0, question);
  const query = new URLSearchParams(question < 0 ? '' : hash.slice(question + 1));
  const params = Object.fromEntries(query.entries());
  const [, head = '', ...rest] = path.split('/');
  const tail = rest.join('/');
  const decode = (s) => { try { return decodeURIComponent(s); } catch { return s; } };
  switch (head) {
    case '': case 'summary': return { page: 'summary', params, path: 'summary' };
    case 'tensors': return { page: 'tensors', params, path: 'tensors' };
    case 'tensor': return { page: 'tensor', params: { ...params, name: decode(tail) }, path: 'tensor' };
    case 'graph': return { page: 'graph', params, path: 'graph' };
    case 'nodes': return { page: 'graph', params, path: 'nodes' };
    case 'node': return { page: 'node', params: { ...params, id: decode(tail) }, path: 'node' };
    default: return { page: 'summary', params, path: 'unknown', unknown: hash };
  }
}

let current = null; // {route, controller, handle}

/** Replaces the URL's hash without a navigation (no hashchange): for state a page already shows. */
function setHash(hash, { replace = true } = {}) {
  const url = `${location.pathname}${location.search}${hash}`;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  if (current) current.route = parseRoute(currentHash());
}

/** Marks the page loading (for the browser tests) while it refetches in place. */
function setLoading() {
  document.body.dataset.state = 'loading';
}

function makeContext(route, controller) {
  return {
    signal: controller.signal,
    route,
    isCurrent: () => !controller.signal.aborted,
    ready() {
      if (controller.signal.aborted) return;
      document.body.dataset.state = 'ready';
      performance.mark(`ready:${route.page}`);
    },
    loading() {
      if (!controller.signal.aborted) setLoading();
    },
    setHash,
  };
}

function updateTopBar(route) {
  for (const link of document.querySelectorAll('[data-nav]')) {
    link.classList.toggle('active', link.dataset.nav === route.page);
  }
  // The box shows the graph page's search; typing there is not overwritten while it has focus.
  const search = document.getElementById('node-search');
  if (route.page !== 'graph') search.value = '';
  else if (document.activeElement !== search) search.value = route.params.q ?? '';
}

async function showRoute() {
  current?.controller.abort();
  const route = parseRoute(currentHash());
  const controller = new AbortController();
  const entry = { route, controller, handle: null };
  current = entry;
  setLoading();
  const main = el('main', { id: 'page', 'data-page': route.page });
  document.getElementById('page').replaceWith(main);
  window.scrollTo(0, 0);
  updateTopBar(route);
  const ctx = makeContext(route, controller);
  try {
    if (route.unknown !== undefined) throw new ApiError(`no page "${route.unknown}"`, 404);
    entry.handle = (await PAGES[route.page].render(main, route.params, ctx)) ?? null;
  } catch (err) {
    if (controller.signal.aborted || err.name === 'AbortError') return;
    main.append(errorBox(err));
    ctx.ready();
  }
}

function runSearch(q) {
  if (current?.route.page === 'graph' && current.handle?.search) current.handle.search(q);
  else if (q !== '') location.hash = href.nodes(q);
}

function wireTopBar() {
  const search = document.getElementById('node-search');
  const later = debounce(() => runSearch(search.value.trim()), 300);
  search.addEventListener('input', later);
  search.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') runSearch(search.value.trim());
  });
  getSummary().then((summary) => {
    const source = document.getElementById('source');
    source.textContent = summary.source ?? '';
    source.title = summary.source ?? '';
    document.title = `${summary.source} · onnxmap view`;
  }, () => { /* the summary page shows the error */ });
}

function start() {
  wireTopBar();
  window.addEventListener('hashchange', showRoute);
  showRoute();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
