// The tensor table page (#/tensors?sort=&order=&filter=&prefix=): a virtual scroller over
// /api/tensors (pages of 200 rows), sortable by clicking a header (module: the module of the
// node that reads each weight, layer by layer), filtered by a glob; beside
// it the size treemap of the same filter (/api/treemap), drilled into by `prefix`.
// Sort clicks and treemap drills push a history entry; typing the filter replaces the entry.

import { el, card, debounce, bytesSpan, errorBox } from './dom.js';
import { formatInt, formatDims, splitPrefix, tensorName } from './format.js';
import { href, queryString } from './url.js';
import { api } from './api.js';
import { createVirtualList } from './scroller.js';
import { drawTreemap, treemapLayout } from './draw.js';

const ROW_HEIGHT = 24;
const PAGE_SIZE = 200;
const TREEMAP_SIZE = { width: 300, height: 420 };
const NEST_FETCHES = 12; // treemap requests for the nested levels, at most
const NEST_MIN = { w: 90, h: 60 }; // a group box this big shows its children inside

/** Columns: key (API sort key when sortable), label, class of the cell. */
const COLUMNS = [
  { key: 'index', label: '#', cls: 'c-index num', sortable: true },
  { key: 'name', label: 'name', cls: 'c-name', sortable: true },
  { key: 'module', label: 'module', cls: 'c-module', sortable: true },
  { key: 'dtype', label: 'dtype', cls: 'c-dtype', sortable: true },
  { key: 'dims', label: 'dims', cls: 'c-dims' },
  { key: 'bytes', label: 'size', cls: 'c-bytes num', sortable: true },
  { key: 'storage', label: 'storage', cls: 'c-storage' },
  { key: 'offset', label: 'offset', cls: 'c-offset num', sortable: true },
];
const SORT_KEYS = new Set(COLUMNS.filter((c) => c.sortable).map((c) => c.key));

/** The page state from the route's params, with defaults. */
function stateFrom(params) {
  return {
    sort: SORT_KEYS.has(params.sort) ? params.sort : 'index',
    order: params.order === 'desc' ? 'desc' : 'asc',
    filter: params.filter ?? '',
    prefix: params.prefix ?? '',
  };
}

function hashOf(state) {
  const { sort, order, filter, prefix } = state;
  return `#/tensors${queryString({ sort: sort === 'index' ? '' : sort, order: order === 'asc' ? '' : order, filter, prefix })}`;
}

export async function render(main, params, ctx) {
  const state = stateFrom(params);
  const view = buildView(state);
  main.append(view.root);
  const list = createVirtualList({
    viewport: view.viewport, rowHeight: ROW_HEIGHT, pageSize: PAGE_SIZE,
    rowsAttrs: { 'data-testid': 'tensors-table' },
    fetchPage: (offset, limit, signal) => api('tensors', { offset, limit, sort: state.sort, order: state.order, filter: state.filter }, { signal }),
    renderRow: tensorRow,
    renderPlaceholder: (index) => el('div', { class: 'row placeholder' }, el('span', { class: 'c-index num' }, index), el('span', { class: 'c-name muted' }, '…')),
    onCount: ({ matched, total }) => {
      view.count.textContent = `${formatInt(matched)} of ${formatInt(total)} tensors`;
      view.empty.hidden = matched !== 0;
    },
    onError: (err) => view.status.replaceChildren(errorBox(err)),
  });
  ctx.signal.addEventListener('abort', () => list.destroy());

  let refreshNumber = 0;
  /** Reloads the table and/or the treemap for the current state; ready when the last one lands. */
  async function refresh({ table = true, treemap = true } = {}) {
    const mine = ++refreshNumber;
    ctx.loading();
    view.status.replaceChildren();
    const jobs = [];
    if (table) jobs.push(list.reset().catch((err) => { if (err.name !== 'AbortError') view.status.replaceChildren(errorBox(err)); }));
    if (treemap) jobs.push(loadTreemap(view, state, ctx, drill));
    await Promise.all(jobs);
    if (mine === refreshNumber) ctx.ready();
  }

  function drill(prefix) {
    state.prefix = prefix;
    ctx.setHash(hashOf(state), { replace: false });
    refresh({ table: false });
  }

  view.onSort = (key) => {
    state.order = state.sort === key ? (state.order === 'asc' ? 'desc' : 'asc') : key === 'bytes' ? 'desc' : 'asc';
    state.sort = key;
    ctx.setHash(hashOf(state), { replace: false });
    updateHeaders(view, state);
    refresh({ treemap: false });
  };
  const applyFilter = debounce(() => {
    state.filter = view.filter.value;
    ctx.setHash(hashOf(state));
    refresh();
  }, 200);
  view.filter.addEventListener('input', () => { ctx.loading(); applyFilter(); });
  updateHeaders(view, state);
  await refresh();
}

function buildView(state) {
  const view = {};
  view.count = el('span', { class: 'count', 'data-testid': 'tensors-count' }, '…');
  view.filter = el('input', {
    type: 'search', class: 'filter mono', 'data-testid': 'tensors-filter', value: state.filter,
    placeholder: 'filter names: glob, e.g. *layers.0.*', 'aria-label': 'filter tensor names (glob)', spellcheck: 'false',
  });
  view.headers = new Map();
  const headerRow = el('div', { class: 'row header', role: 'row' }, COLUMNS.map((column) => {
    if (!column.sortable) return el('span', { class: column.cls, role: 'columnheader' }, column.label);
    const button = el('button', {
      type: 'button', class: `${column.cls} sort`, 'data-testid': `tensors-header-${column.key}`, role: 'columnheader',
      onclick: () => view.onSort(column.key),
    }, column.label);
    view.headers.set(column.key, button);
    return button;
  }));
  view.viewport = el('div', { class: 'vlist tensor-list' });
  view.empty = el('p', { class: 'muted empty', hidden: true }, 'no tensor name matches the filter');
  view.status = el('div', { class: 'status' });
  view.treemapPanel = el('div', { class: 'treemap-panel' });
  view.root = el('div', { class: 'tensors-page' },
    el('div', { class: 'page-head' }, el('h1', null, 'Tensors'), view.count),
    el('div', { class: 'toolbar' }, view.filter, el('span', { class: 'muted small' }, '* any run · ? one character · [abc] a set')),
    view.status,
    el('div', { class: 'split' },
      el('div', { class: 'table-box tensor-table' }, headerRow, view.empty, view.viewport),
      card('Size by name', { class: 'card treemap-card' }, view.treemapPanel)));
  return view;
}

/** Marks the sorted header with an arrow and aria-sort. */
function updateHeaders(view, state) {
  for (const [key, button] of view.headers) {
    const active = key === state.sort;
    const label = COLUMNS.find((c) => c.key === key).label;
    button.textContent = active ? `${label} ${state.order === 'asc' ? '▲' : '▼'}` : label;
    button.classList.toggle('active', active);
    button.setAttribute('aria-sort', active ? (state.order === 'asc' ? 'ascending' : 'descending') : 'none');
  }
}

/** One row of the table for an /api/tensors row. */
function tensorRow(t) {
  const storageTitle = t.file ? `${t.storage}: ${t.file}` : t.storage;
  return el('div', { class: 'row', 'data-testid': 'tensor-row', 'data-name': t.name, 'data-index': t.index },
    el('span', { class: 'c-index num' }, t.index),
    el('span', { class: 'c-name' }, el('a', { href: href.tensor(t.name, t.index), title: t.name }, tensorName(t.name))),
    el('span', { class: 'c-module', title: t.module ?? 'read by no node of the main graph naming a module' }, t.module ?? '—'),
    el('span', { class: 'c-dtype' }, t.dtype),
    el('span', { class: 'c-dims', title: formatDims(t.dims) }, formatDims(t.dims)),
    el('span', { class: 'c-bytes num' }, bytesSpan(t.bytes)),
    el('span', { class: 'c-storage', title: storageTitle }, t.storage),
    el('span', { class: 'c-offset num' }, t.offset >= 0 ? formatInt(t.offset) : '—'));
}

/** Fetches and draws the treemap of `state.prefix` and `state.filter` into the panel. */
async function loadTreemap(view, state, ctx, drill) {
  const panel = view.treemapPanel;
  view.treemapNumber = (view.treemapNumber ?? 0) + 1;
  const mine = view.treemapNumber;
  try {
    const map = await api('treemap', { prefix: state.prefix, filter: state.filter }, { signal: ctx.signal });
    await loadNextLevels(map.children ?? [], state.filter, ctx.signal);
    if (mine !== view.treemapNumber) return; // a newer drill or filter won
    const hrefOf = (child) => {
      if (child.others || child.terminal) return null;
      if (child.leaf) return href.tensor(child.tensor ?? child.prefix ?? child.name);
      return hashOf({ ...state, prefix: child.prefix });
    };
    const svg = drawTreemap(map.children ?? [], { ...TREEMAP_SIZE, hrefOf });
    svg.addEventListener('click', (event) => interceptDrill(event, drill));
    panel.replaceChildren(breadcrumb(state.prefix, (p) => hashOf({ ...state, prefix: p }), drill),
      el('div', { class: 'muted small' }, `${formatInt(map.tensors)} tensors, `, bytesSpan(map.bytes)), svg);
  } catch (err) {
    if (err.name !== 'AbortError') panel.replaceChildren(errorBox(err));
  }
}

/**
 * Fetches the children of the groups whose boxes are large enough to show them, largest first,
 * level by level (at most NEST_FETCHES requests), so the treemap shows the structure under a
 * dominant group. Failures are skipped: such a group stays one box.
 */
async function loadNextLevels(children, filter, signal) {
  const tried = new Set();
  let budget = NEST_FETCHES;
  while (budget > 0) {
    const boxes = treemapLayout(children, { x: 0, y: 0, w: TREEMAP_SIZE.width, h: TREEMAP_SIZE.height });
    const wanted = boxes
      .filter(({ child, rect, header }) => !header && !child.leaf && !child.others && !child.terminal && !tried.has(child) &&
        rect.w >= NEST_MIN.w && rect.h >= NEST_MIN.h)
      .sort((a, b) => b.child.bytes - a.child.bytes)
      .slice(0, budget);
    if (wanted.length === 0) return;
    budget -= wanted.length;
    await Promise.all(wanted.map(async ({ child }) => {
      tried.add(child);
      try {
        child.children = (await api('treemap', { prefix: child.prefix, filter }, { signal })).children ?? [];
      } catch (err) {
        if (err.name === 'AbortError') throw err;
      }
    }));
  }
}

/** A click on a group box drills in place (no full re-render); leaves follow their link. */
function interceptDrill(event, drill) {
  const link = event.target.closest('a');
  if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
  const target = link.getAttribute('href');
  if (!target.startsWith('#/tensors')) return;
  event.preventDefault();
  drill(new URLSearchParams(target.split('?')[1] ?? '').get('prefix') ?? '');
}

/** Prefix segments as links: "all › model. › layers. › 0.". */
function breadcrumb(prefix, hashFor, drill) {
  const crumbs = [el('a', { href: hashFor(''), 'data-prefix': '' }, 'all')];
  let sofar = '';
  for (const segment of splitPrefix(prefix)) {
    sofar += segment;
    crumbs.push(el('span', { class: 'sep' }, '›'), el('a', { href: hashFor(sofar), 'data-prefix': sofar, class: 'mono' }, segment));
  }
  const nav = el('nav', { class: 'breadcrumb', 'data-testid': 'treemap-breadcrumb' }, crumbs);
  nav.addEventListener('click', (event) => interceptDrill(event, drill));
  return nav;
}
