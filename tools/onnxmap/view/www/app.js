// The viewer's entry module: the hash router, the API helper, and the formatting and DOM
// helpers every page shares. Pages import these helpers; the router imports the pages. The
// cycle is harmless: pages only call the helpers after every module has been evaluated.
//
// A page module exports `render(main, params, ctx)`: it fills `main` (a fresh
// <main id="page" data-page="...">) and calls `ctx.ready()` once its data is drawn. It may
// return a handle object; the router calls `handle.search(q)` (when present) for the top-bar
// search instead of navigating. Everything a page starts must stop when `ctx.signal` aborts
// (it aborts when the user navigates away).

import * as summaryPage from './summary.js';
import * as tensorsPage from './tensors.js';
import * as tensorPage from './tensor.js';
import * as graphPage from './graph.js';
import * as nodePage from './node.js';

const PAGES = { summary: summaryPage, tensors: tensorsPage, tensor: tensorPage, graph: graphPage, node: nodePage };

// ---------------------------------------------------------------------------------------------
// API

/** An error answered by the API ({"error": message} with a non-2xx status) or by the network. */
export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

/** "?a=1&b=x" from an object; null, undefined and "" values are left out. */
export function queryString(params) {
  const parts = [];
  for (const [key, value] of Object.entries(params ?? {})) {
    if (value === undefined || value === null || value === '') continue;
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/**
 * Calls /api/<path> and resolves to the parsed JSON body. Rejects with an ApiError carrying the
 * server's message when the status is not 2xx. A 2xx body is returned even when it holds an
 * "error" field (a failed statistics job reports its error that way).
 */
export async function api(path, params = {}, { method = 'GET', signal } = {}) {
  let response;
  try {
    response = await fetch(`/api/${path}${queryString(params)}`, { method, signal, headers: { Accept: 'application/json' } });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(`cannot reach the onnxmap server (${err.message})`, 0);
  }
  let body = null;
  try {
    body = await response.json();
  } catch (err) {
    if (err.name === 'AbortError') throw err;
  }
  if (!response.ok) {
    const message = body && typeof body.error === 'string' ? body.error : `${response.status} ${response.statusText}`;
    throw new ApiError(message, response.status);
  }
  if (body === null) throw new ApiError(`the answer of /api/${path} is not JSON`, response.status);
  return body;
}

let summaryPromise = null;

/** The model summary, fetched once and shared (it never changes while the server runs). */
export function getSummary() {
  if (!summaryPromise) {
    summaryPromise = api('summary');
    summaryPromise.catch(() => { summaryPromise = null; });
  }
  return summaryPromise;
}

// ---------------------------------------------------------------------------------------------
// Formatting

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** 1024-based size with one decimal: "511.3 KiB"; bytes below 1 KiB are whole: "128 B". */
export function formatBytes(bytes) {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes)) return '—';
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${BYTE_UNITS[unit]}`;
}

/** An integer with thousands separators ("259,392"); "—" when not a number. */
export function formatInt(n) {
  return typeof n === 'number' && Number.isFinite(n) ? n.toLocaleString('en-US') : '—';
}

/** A decoded tensor value or statistic: numbers to 6 significant digits, "nan"/"inf" kept,
 *  [re, im] pairs as "re+imi", strings as they are, null as "—". */
export function formatValue(v) {
  if (v === null || v === undefined) return '—';
  if (Array.isArray(v) && v.length === 2) {
    const im = formatValue(v[1]);
    return `${formatValue(v[0])}${im.startsWith('-') ? '' : '+'}${im}i`;
  }
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e9)) return v.toExponential(4).replace(/\.?0+e/, 'e');
  return String(Number(v.toPrecision(6)));
}

/** Dims as "[256, 64]" ("[]" for a scalar). */
export function formatDims(dims) {
  return `[${(dims ?? []).join(', ')}]`;
}

/** The segments of a name prefix, each ending after "." or "/": "a.b/c" -> ["a.", "b/", "c"]. */
export function splitPrefix(prefix) {
  return prefix.match(/[^./]*[./]|[^./]+$/g) ?? [];
}

/** Node name for display: the name, or "(unnamed)". */
export function nodeLabel(node) {
  return node.name || `(unnamed ${node.op_type || 'node'})`;
}

// ---------------------------------------------------------------------------------------------
// DOM helpers. Model strings only ever reach the page as text nodes or attribute values.

function applyAttrs(element, attrs) {
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') element.setAttribute('class', value);
    else if (key.startsWith('on') && typeof value === 'function') element.addEventListener(key.slice(2), value);
    else if (key === 'value' && 'value' in element) element.value = value;
    else element.setAttribute(key, value === true ? '' : String(value));
  }
}

/** Appends children (nodes, strings, nested arrays) to `element`, skipping null/undefined/false. */
export function appendChildren(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Creates an HTML element: el('a', {href: '#/x', class: 'k'}, 'text', childNode, [more]). */
export function el(tag, attrs, ...children) {
  const element = document.createElement(tag);
  applyAttrs(element, attrs);
  appendChildren(element, children);
  return element;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Creates an SVG element, same conventions as el(). */
export function svgEl(tag, attrs, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  applyAttrs(element, attrs);
  appendChildren(element, children);
  return element;
}

/** A size as text with the exact byte count in the tooltip. */
export function bytesSpan(bytes) {
  return el('span', { class: 'num', title: `${formatInt(bytes)} bytes` }, formatBytes(bytes));
}

/** A card: <section class="card"><h2>title</h2>...children</section>. */
export function card(title, attrs, ...children) {
  return el('section', { class: 'card', ...attrs }, title ? el('h2', null, title) : null, ...children);
}

/** A readable error box (data-testid="error"); never an alert. */
export function errorBox(err) {
  const message = err instanceof Error ? err.message : String(err);
  const status = err && err.status ? ` (${err.status})` : '';
  return el('div', { class: 'error', 'data-testid': 'error', role: 'alert' }, `Error${status}: ${message}`);
}

/** Link targets of the pages. */
export const href = {
  tensor: (name) => `#/tensor/${encodeURIComponent(name)}`,
  node: (id) => `#/node/${encodeURIComponent(id)}`,
  graph: (prefix) => `#/graph${queryString({ prefix })}`,
  nodes: (q) => `#/nodes${queryString({ q })}`,
};

/** Calls fn(...args) once no call came for `ms` milliseconds. */
export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// ---------------------------------------------------------------------------------------------
// Router

/** The hash of the current URL, raw (location.hash may come back decoded in some browsers). */
function currentHash() {
  const at = location.href.indexOf('#');
  return at < 0 ? '' : location.href.slice(at + 1);
}

/** {page, params, path} of a hash such as "/tensor/a%2Fb" or "/tensors?sort=bytes". */
export function parseRoute(hash) {
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
export function setHash(hash, { replace = true } = {}) {
  const url = `${location.pathname}${location.search}${hash}`;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  if (current) current.route = parseRoute(currentHash());
}

/** Marks the page loading (for the browser tests) while it refetches in place. */
export function setLoading() {
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
