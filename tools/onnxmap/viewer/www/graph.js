// The graph page (#/graph?prefix=&q=, and #/nodes?q= which scrolls to the node list): the main
// graph folded by node name (/api/fold), the children of `prefix` as boxes laid out in layers
// along their edges; a group box unfolds (navigates to its prefix), a one-node box opens the
// node. Below, the node search list (/api/nodes, virtual scroller) for `q`. The top bar's
// search box calls the returned handle's search(q), which updates the list in place.

import { el, card, errorBox } from './dom.js';
import { formatInt, splitPrefix, nodeLabel } from './format.js';
import { href, queryString } from './url.js';
import { api } from './api.js';
import { createVirtualList } from './scroller.js';
import { drawDiagram } from './diagram.js';

const FOLD_PAGE = 200;
const NODE_PAGE = 100;
const NODE_ROW_HEIGHT = 24;
const BOX = { boxWidth: 214, boxHeight: 62, gapMain: 44, gapCross: 14, columnMax: 4 };

export async function render(main, params, ctx) {
  const state = { prefix: params.prefix ?? '', q: params.q ?? '' };
  const overview = { children: [], edges: [], total: 0, nodes: 0 };
  const ui = buildView(state);
  main.append(ui.root);
  const list = createNodeList(ui, state);
  ctx.signal.addEventListener('abort', () => list.destroy());

  const loadMore = async () => {
    ui.more.disabled = true;
    try {
      await loadFoldPage(state.prefix, overview, ctx.signal);
      drawOverview(ui, overview, main);
    } catch (err) {
      if (err.name !== 'AbortError') ui.overviewStatus.replaceChildren(errorBox(err));
    }
    ui.more.disabled = false;
  };
  ui.more.addEventListener('click', loadMore);

  await Promise.all([loadMore(), resetList(list, ui)]);
  if (ctx.route.path === 'nodes') ui.nodesCard.scrollIntoView({ block: 'start' });
  ctx.ready();

  return {
    /** Shows the nodes matching `q` without leaving the page. */
    async search(q) {
      state.q = q;
      ctx.setHash(`#/graph${queryString({ prefix: state.prefix, q })}`);
      ctx.loading();
      await resetList(list, ui);
      ctx.ready();
    },
  };
}

function buildView(state) {
  const ui = {};
  ui.summary = el('span', { class: 'muted' }, '…');
  ui.overviewBox = el('div', { class: 'overview-box' });
  ui.overviewStatus = el('div', { class: 'status' });
  ui.more = el('button', { type: 'button', hidden: true, 'data-testid': 'fold-more' }, 'Load more');
  ui.moreText = el('span', { class: 'muted small' });
  ui.nodeCount = el('span', { class: 'muted small' }, '…');
  ui.nodeStatus = el('div', { class: 'status' });
  ui.nodeViewport = el('div', { class: 'vlist node-list' });
  ui.nodeEmpty = el('p', { class: 'muted empty', hidden: true }, 'no node matches');
  ui.nodeQuery = el('span', { class: 'query mono' });
  ui.nodesCard = card(null, { class: 'card nodes-card' },
    el('h2', null, 'Nodes ', ui.nodeQuery, ' ', ui.nodeCount),
    ui.nodeStatus,
    el('div', { class: 'table-box' },
      el('div', { class: 'row header node-row-layout' }, el('span', { class: 'c-id num' }, 'id'), el('span', { class: 'c-op' }, 'op type'),
        el('span', { class: 'c-node' }, 'name'), el('span', { class: 'c-io' }, 'inputs → outputs')),
      ui.nodeEmpty, ui.nodeViewport));
  ui.root = el('div', { class: 'graph-page' },
    el('div', { class: 'page-head' }, el('h1', null, 'Graph'), ui.summary),
    breadcrumb(state.prefix),
    card(null, { class: 'card overview-card' }, ui.overviewStatus, ui.overviewBox,
      el('div', { class: 'toolbar' }, ui.more, ui.moreText)),
    ui.nodesCard);
  return ui;
}

/** "graph › model. › layers." links to each enclosing prefix. */
function breadcrumb(prefix) {
  const crumbs = [el('a', { href: href.graph(''), 'data-prefix': '' }, 'graph')];
  let sofar = '';
  for (const segment of splitPrefix(prefix)) {
    sofar += segment;
    crumbs.push(el('span', { class: 'sep' }, '›'), el('a', { href: href.graph(sofar), 'data-prefix': sofar, class: 'mono' }, segment));
  }
  return el('nav', { class: 'breadcrumb', 'data-testid': 'graph-breadcrumb' }, crumbs);
}

/** Appends the next page of children (and its edges) to `overview`. */
async function loadFoldPage(prefix, overview, signal) {
  const offset = overview.children.length;
  const page = await api('fold', { prefix, offset, limit: FOLD_PAGE }, { signal });
  overview.children.push(...(page.children ?? []));
  // Edges name children by their place among all of them, each edge once: they add up.
  for (const e of page.edges ?? []) overview.edges.push({ from: e.from, to: e.to, tensors: e.tensors });
  overview.total = page.total_children ?? overview.children.length;
  overview.nodes = page.nodes ?? 0;
}

/** Longest-path layers over the forward edges (children come in graph order). */
function layersOf(count, edges) {
  const layer = new Array(count).fill(0);
  const outgoing = Array.from({ length: count }, () => []);
  for (const e of edges) if (e.from < e.to && e.to < count) outgoing[e.from].push(e.to);
  for (let i = 0; i < count; i += 1) {
    for (const to of outgoing[i]) layer[to] = Math.max(layer[to], layer[i] + 1);
  }
  return layer;
}

/** "MatMul 4000 · Add 200" of the most common op types. */
function topOps(opTypes, max) {
  return Object.entries(opTypes ?? {}).sort((a, b) => b[1] - a[1]).slice(0, max)
    .map(([op, n]) => `${op} ${formatInt(n)}`).join(' · ');
}

function foldBox(child, i, layer) {
  const ops = topOps(child.op_types, 3);
  if (child.node !== undefined && child.node !== null) {
    const op = Object.keys(child.op_types ?? {})[0] ?? '';
    return {
      key: i, layer, lines: [child.name, op, `node ${child.node}`], cls: 'single', href: href.node(child.node),
      title: `${child.prefix ?? child.name}\n${op} node ${child.node}`,
      attrs: { 'data-testid': 'fold-node', 'data-node': child.node, 'data-prefix': child.prefix ?? '' },
    };
  }
  return {
    key: i, layer, lines: [child.name, `${formatInt(child.nodes)} node${child.nodes === 1 ? '' : 's'}`, ops],
    title: `${child.prefix}\n${formatInt(child.nodes)} nodes\n${topOps(child.op_types, 6)}`,
    href: href.graph(child.prefix), attrs: { 'data-testid': 'fold-box', 'data-prefix': child.prefix },
  };
}

function drawOverview(ui, overview, main) {
  const { children, edges, total } = overview;
  const layer = layersOf(children.length, edges);
  const boxes = children.map((child, i) => foldBox(child, i, layer[i]));
  const lines = edges.map((e) => ({ from: e.from, to: e.to, weight: e.tensors, title: `${formatInt(e.tensors)} value${e.tensors === 1 ? '' : 's'}` }));
  const maxWidth = Math.max(600, main.clientWidth - 64);
  const svg = children.length
    ? drawDiagram(boxes, lines, { ...BOX, direction: 'flow', maxWidth, svgAttrs: { 'data-testid': 'graph-overview' } })
    : el('p', { class: 'muted' }, 'no nodes under this prefix');
  ui.overviewBox.replaceChildren(svg);
  ui.summary.textContent = `${formatInt(overview.nodes)} nodes in ${formatInt(total)} children`;
  ui.more.hidden = children.length >= total;
  ui.moreText.textContent = children.length < total ? `showing ${formatInt(children.length)} of ${formatInt(total)} children` : '';
}

function createNodeList(ui, state) {
  return createVirtualList({
    viewport: ui.nodeViewport, rowHeight: NODE_ROW_HEIGHT, pageSize: NODE_PAGE,
    rowsAttrs: { 'data-testid': 'node-list' },
    fetchPage: (offset, limit, signal) => api('nodes', { q: state.q, offset, limit }, { signal }),
    renderRow: nodeRow,
    renderPlaceholder: (index) => el('div', { class: 'row node-row-layout placeholder' }, el('span', { class: 'c-id num' }, '…'), el('span', { class: 'c-op muted' }, `#${index}`)),
    onCount: ({ matched, total }) => {
      ui.nodeCount.textContent = `${formatInt(matched)} of ${formatInt(total)}`;
      ui.nodeQuery.textContent = state.q ? `matching “${state.q}”` : '';
      ui.nodeEmpty.hidden = matched !== 0;
    },
    onError: (err) => ui.nodeStatus.replaceChildren(errorBox(err)),
  });
}

async function resetList(list, ui) {
  ui.nodeStatus.replaceChildren();
  try {
    await list.reset();
  } catch (err) {
    if (err.name !== 'AbortError') ui.nodeStatus.replaceChildren(errorBox(err));
  }
}

function nodeRow(n) {
  const io = `${(n.inputs ?? []).join(', ')} → ${(n.outputs ?? []).join(', ')}`;
  return el('div', { class: 'row node-row-layout', 'data-testid': 'node-row', 'data-id': n.id },
    el('span', { class: 'c-id num' }, n.id),
    el('span', { class: 'c-op mono', title: n.domain ? `${n.domain}.${n.op_type}` : n.op_type }, n.op_type),
    el('span', { class: 'c-node' }, el('a', { href: href.node(n.id), class: 'mono', title: nodeLabel(n) }, nodeLabel(n))),
    el('span', { class: 'c-io mono muted', title: io }, io));
}
