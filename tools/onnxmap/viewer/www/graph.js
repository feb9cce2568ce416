// The graph page (#/graph?graph=&level=&open=&node=&q=, and #/nodes?q= which scrolls to the
// node list): the graph drawn as the server lays it out (/api/graph): the boxes of a level,
// some unfolded in place into clusters, edges routed between them. A click on a group, a run
// of repeated blocks ("× N") or a range unfolds it in place; a click on a cluster's label folds
// it back; `node` unfolds what holds a node and marks it. Below, the node search list
// (/api/nodes, virtual scroller) for `q`, each row with a link that shows the node in the
// drawing. The top bar's search box calls the returned handle's search(q).

import { el, card, errorBox } from './dom.js';
import { formatInt, nodeLabel } from './format.js';
import { href, queryString } from './url.js';
import { api } from './api.js';
import { createVirtualList } from './scroller.js';
import { drawScene } from './graphdraw.js';
import { scrollToStart, showRest } from './drawingview.js';

const NODE_PAGE = 100;
const NODE_ROW_HEIGHT = 24;

/** The hash of the graph page for `state` (open boxes joined by newlines). */
function graphHash(state) {
  return `#/graph${queryString({
    graph: state.graph, level: state.level === 'g:' ? '' : state.level,
    open: state.open === null ? null : state.open.join('\n') || '-', node: state.node, q: state.q,
  })}`;
}

export async function render(main, params, ctx) {
  const state = {
    graph: params.graph ?? '', level: params.level || 'g:', node: params.node ?? '', q: params.q ?? '',
    open: params.open === undefined ? null : params.open.split('\n').filter((id) => id && id !== '-'),
  };
  const ui = buildView(state);
  main.append(ui.root);
  const list = createNodeList(ui, state);
  ctx.signal.addEventListener('abort', () => list.destroy());
  const view = { state, ui, ctx, stopRest: null };
  ctx.signal.addEventListener('abort', () => view.stopRest?.());
  await Promise.all([redraw(view), resetList(list, ui)]);
  if (ctx.route.path === 'nodes') ui.nodesCard.scrollIntoView({ block: 'start' });
  ctx.ready();
  return {
    /** Shows the nodes matching `q` without leaving the page. */
    async search(q) {
      state.q = q;
      ctx.setHash(graphHash(state));
      ctx.loading();
      await resetList(list, ui);
      ctx.ready();
    },
  };
}

/** Fetches and draws the scene of `view.state`; keeps the box at `anchor` (an id) in place. */
async function redraw(view, anchor = null) {
  const { state, ui, ctx } = view;
  const before = anchor ? screenTop(ui, anchor) : null;
  const started = performance.now();
  let scene;
  try {
    scene = await api('graph', {
      graph: state.graph, level: state.level, node: state.node,
      open: state.open === null ? undefined : state.open.join('\n'),
    }, { signal: ctx.signal });
  } catch (err) {
    if (err.name !== 'AbortError') ui.drawingStatus.replaceChildren(errorBox(err));
    return;
  }
  state.open = scene.open;
  state.node = '';
  ctx.setHash(graphHash(state));
  ui.drawingStatus.replaceChildren();
  const svg = drawScene(scene, {
    graph: state.graph,
    onUnfold: (box) => toggle(view, box.id, true),
    onFold: (cluster) => toggle(view, cluster.id, false),
  });
  ui.drawingBox.replaceChildren(svg);
  ui.layoutNote.hidden = !scene.layout_note;
  ui.layoutNote.textContent = scene.layout_note ?? '';
  ui.summary.textContent = summaryText(scene, performance.now() - started);
  ui.refused.hidden = !scene.refused.length;
  ui.refused.textContent = scene.refused.length
    ? `Not unfolded (the drawing would pass its limit of boxes; fold something first): ${scene.refused.join(', ')}` : '';
  ui.blocks.replaceChildren(...scene.clusters.filter((c) => c.count).map((c) => blockList(view, c)));
  const keep = anchor ?? scene.found;
  if (keep) scrollToBox(ui, keep, anchor ? before : null);
  else scrollToStart(ui.drawingBox, scene);
  view.stopRest?.();
  view.stopRest = showRest(ui.drawingBox, ui.rest, scene);
}

function summaryText(scene, ms) {
  const nodes = scene.boxes.filter((b) => b.kind === 'node').length;
  return `${formatInt(scene.boxes.length)} boxes (${formatInt(nodes)} single nodes), ${formatInt(scene.edges.length)} edges, ${formatInt(scene.clusters.length)} unfolded · ${Math.round(ms)} ms`;
}

function toggle(view, id, unfold) {
  const { state } = view;
  const open = (state.open ?? []).filter((o) => o !== id && !(unfold === false && o.startsWith(id)));
  if (unfold) open.push(id);
  state.open = open;
  view.ctx.loading();
  redraw(view, id).then(() => view.ctx.ready());
}

/** The blocks of an unfolded run, each a link that unfolds that block instead. */
function blockList(view, cluster) {
  const parts = cluster.id.split(':');
  const shown = Number(parts[4]);
  const idOf = (k) => [...parts.slice(0, 4), String(k), ...parts.slice(5)].join(':');
  const show = (k) => {
    view.state.open = view.state.open.map((o) => (o === cluster.id ? idOf(k) : o));
    view.ctx.loading();
    redraw(view, idOf(k)).then(() => view.ctx.ready());
  };
  const names = cluster.blocks?.length ? cluster.blocks : null;
  const pick = el('select', { 'data-testid': 'block-select', 'aria-label': 'block shown' });
  for (let k = 0; k < cluster.count && (names || k < 1); k += 1) {
    pick.append(el('option', { value: k, selected: k === shown }, `${k}: ${names ? names[k] : ''}`));
  }
  const number = el('input', { type: 'number', min: 0, max: cluster.count - 1, value: shown, class: 'block-number', 'aria-label': 'block number' });
  pick.addEventListener('change', () => show(Number(pick.value)));
  number.addEventListener('change', () => show(Math.min(cluster.count - 1, Math.max(0, Number(number.value) || 0))));
  return el('div', { class: 'block-list', 'data-testid': 'block-list' },
    el('span', { class: 'mono' }, cluster.label), ` — ${formatInt(cluster.count)} blocks alike (${cluster.first} … ${cluster.last}); showing block `,
    names ? pick : number);
}

function screenTop(ui, id) {
  const node = ui.drawingBox.querySelector(`[data-id="${CSS.escape(id)}"]`);
  return node ? node.getBoundingClientRect().top - ui.drawingBox.getBoundingClientRect().top : null;
}

function scrollToBox(ui, id, before) {
  const node = ui.drawingBox.querySelector(`[data-id="${CSS.escape(id)}"]`);
  if (!node) return;
  const box = ui.drawingBox.getBoundingClientRect();
  const rect = node.getBoundingClientRect();
  const top = rect.top - box.top;
  ui.drawingBox.scrollTop += before === null ? top - box.height / 3 : top - before;
  ui.drawingBox.scrollLeft += rect.left - box.left - box.width / 2 + Math.min(rect.width, box.width) / 2;
}

function buildView(state) {
  const ui = {};
  ui.summary = el('span', { class: 'muted', 'data-testid': 'graph-summary' }, '…');
  ui.drawingBox = el('div', { class: 'drawing-box' });
  ui.drawingStatus = el('div', { class: 'status' });
  ui.refused = el('p', { class: 'muted small', hidden: true });
  ui.layoutNote = el('p', { class: 'notice small', hidden: true, 'data-testid': 'layout-note' });
  ui.rest = el('div', { class: 'rest-bar', hidden: true, 'data-testid': 'drawing-rest' });
  ui.blocks = el('div', { class: 'blocks' });
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
  const foldAll = el('a', { href: graphHash({ ...state, open: [], node: '' }), 'data-testid': 'fold-all' }, 'fold all');
  ui.root = el('div', { class: 'graph-page' },
    el('div', { class: 'page-head' }, el('h1', null, 'Graph'), ui.summary),
    breadcrumb(state),
    card(null, { class: 'card drawing-card' }, ui.drawingStatus,
      el('div', { class: 'toolbar' }, el('span', { class: 'muted small' }, 'Click a box to unfold it, a cluster’s label to fold it. '), foldAll),
      ui.blocks, ui.refused, ui.layoutNote, ui.drawingBox, ui.rest),
    ui.nodesCard);
  return ui;
}

/** "main graph › 12.then_branch" and the level: links to each enclosing graph and level. */
function breadcrumb(state) {
  const crumbs = [el('a', { href: '#/graph' }, 'main graph')];
  let sofar = '';
  for (const step of state.graph ? state.graph.split('/') : []) {
    sofar += (sofar ? '/' : '') + step;
    crumbs.push(el('span', { class: 'sep' }, '›'), el('a', { href: graphHash({ graph: sofar, level: 'g:', open: null }), class: 'mono' }, `node ${step}`));
  }
  if (state.level !== 'g:') {
    crumbs.push(el('span', { class: 'sep' }, '›'), el('span', { class: 'mono' }, state.level));
  }
  return el('nav', { class: 'breadcrumb', 'data-testid': 'graph-breadcrumb' }, crumbs);
}

function createNodeList(ui, state) {
  return createVirtualList({
    viewport: ui.nodeViewport, rowHeight: NODE_ROW_HEIGHT, pageSize: NODE_PAGE,
    rowsAttrs: { 'data-testid': 'node-list' },
    fetchPage: (offset, limit, signal) => api('nodes', { graph: state.graph, q: state.q, offset, limit }, { signal }),
    renderRow: (n) => nodeRow(n, state.graph),
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

function nodeRow(n, graph) {
  const io = `${(n.inputs ?? []).join(', ')} → ${(n.outputs ?? []).join(', ')}`;
  return el('div', { class: 'row node-row-layout', 'data-testid': 'node-row', 'data-id': n.id },
    el('span', { class: 'c-id num' }, n.id),
    el('span', { class: 'c-op mono', title: n.domain ? `${n.domain}.${n.op_type}` : n.op_type }, n.op_type),
    el('span', { class: 'c-node' }, el('a', { href: href.node(n.id, graph), class: 'mono', title: nodeLabel(n) }, nodeLabel(n)),
      ' ', el('a', { href: href.graphNode(n.id, graph), class: 'small', 'data-testid': 'show-in-graph', title: 'show this node in the drawing' }, '◎ show')),
    el('span', { class: 'c-io mono muted', title: io }, io));
}
