// One tensor's page (#/tensor/<encoded name>[?index=I]): its facts (/api/tensor), the consumer
// nodes, the first 64 values (/api/values), the statistics section (stats.js) and, when it
// applies, the heat map (/api/heatmap). Ready once the facts, values and heat map are drawn.

import { el, appendChildren, card, bytesSpan, errorBox } from './dom.js';
import { formatInt, formatDims, formatValue, nodeLabel, tensorName } from './format.js';
import { href } from './url.js';
import { api } from './api.js';
import { drawHeatmap } from './draw.js';
import { statsSection } from './stats.js';

const VALUE_COUNT = 64;
const HEATMAP_CELLS = 256;

export async function render(main, params, ctx) {
  // The row the link came from, if any, goes with every call (api.md: names may repeat).
  const tensor = { ...await api('tensor', { name: params.name, index: params.index }, { signal: ctx.signal }), index: params.index };
  const valuesBox = el('div', { class: 'values-box' }, el('p', { class: 'muted' }, 'loading values…'));
  const heatmapBox = el('div', { class: 'heatmap-box' }, el('p', { class: 'muted' }, 'loading heat map…'));
  appendChildren(main, [
    el('div', { class: 'page-head' },
      el('div', { class: 'kicker' }, 'tensor'),
      el('h1', { class: 'mono wrap', 'data-testid': 'tensor-name' }, tensorName(tensor.name))),
    el('div', { class: 'grid-2' },
      el('div', { class: 'column' }, factsCard(tensor), consumersCard(tensor)),
      el('div', { class: 'column' }, card(`First values`, { 'data-testid': 'tensor-values' }, valuesBox))),
    tensor.has_stats
      ? statsSection(tensor, ctx)
      : card('Statistics', { 'data-stats-state': 'idle' }, el('p', { class: 'muted' }, `no statistics for ${tensor.dtype} tensors`)),
    tensor.heatmap ? card('Heat map', null, heatmapBox) : null]);
  await Promise.all([
    loadValues(tensor, valuesBox, ctx),
    tensor.heatmap ? loadHeatmap(tensor, heatmapBox, ctx) : null,
  ]);
  ctx.ready();
}

function factsCard(t) {
  const where = t.storage === 'external' ? `external: ${t.file || '(file not named)'}` : t.storage;
  const rows = [
    ['dims', el('span', { class: 'mono', 'data-testid': 'tensor-dims' }, formatDims(t.dims))],
    ['dtype', el('span', { class: 'mono', 'data-testid': 'tensor-dtype' }, t.dtype)],
    ['elements', el('span', { class: 'num' }, formatInt(t.elements))],
    ['size', bytesSpan(t.bytes)],
    ['storage', el('span', { class: 'mono' }, where)],
    ['offset', el('span', { class: 'num', title: 'file offset of the payload' }, t.offset !== undefined ? formatInt(t.offset) : '— (no payload)')],
    ['path', el('span', { class: 'mono', 'data-testid': 'tensor-path' }, t.path ?? '')],
  ];
  // Whose weight it is where the name does not say (a folded transpose's val_772), and what a
  // packed weight holds (MatMulNBits' B: N x K 4-bit integers in UINT8 bytes).
  if (t.module) rows.splice(0, 0, ['module', el('span', { class: 'mono', 'data-testid': 'tensor-module' }, t.module)]);
  if (t.logical) {
    const l = t.logical;
    rows.splice(rows.findIndex(([k]) => k === 'elements'), 0, ['holds', el('span', { class: 'mono', 'data-testid': 'tensor-logical' },
      `${l.dtype}${formatDims(l.dims)}${l.block_size ? ` in blocks of ${l.block_size}` : ''}, as ${l.op} reads it`)]);
  }
  if (t.doc_string) rows.push(['doc string', el('pre', { class: 'doc' }, t.doc_string)]);
  return card('Tensor', null, el('table', { class: 'kv' }, el('tbody', null,
    rows.map(([k, v]) => el('tr', null, el('th', null, k), el('td', null, v))))));
}

function consumersCard(t) {
  const consumers = t.consumers ?? [];
  const total = t.consumers_total ?? consumers.length;
  const items = consumers.map((n) => el('li', null,
    el('a', { href: href.node(n.id), class: 'mono', 'data-testid': 'node-link' }, nodeLabel(n)),
    el('span', { class: 'op-tag' }, n.op_type)));
  const more = total > consumers.length
    ? el('p', { class: 'small' }, `and ${formatInt(total - consumers.length)} more: `, el('a', { href: href.nodes(t.name) }, 'search nodes'))
    : null;
  return card(`Read by ${formatInt(total)} node${total === 1 ? '' : 's'}`, { 'data-testid': 'tensor-consumers' },
    items.length ? el('ul', { class: 'links scroll-box' }, items) : el('p', { class: 'muted' }, 'no node of the main graph reads it'),
    more);
}

async function loadValues(t, box, ctx) {
  try {
    const answer = await api('values', { name: t.name, index: t.index, count: VALUE_COUNT }, { signal: ctx.signal });
    const values = answer.values ?? [];
    const cells = values.map((v, i) => el('div', { class: 'value', title: `[${i}] ${formatValue(v)}` },
      el('span', { class: 'value-index' }, i), el('span', { class: 'value-text' }, formatValue(v))));
    box.replaceChildren(
      el('p', { class: 'muted small' }, `the first ${formatInt(values.length)} of ${formatInt(answer.total)} values, in row-major order`),
      values.length ? el('div', { class: 'value-grid mono' }, cells) : el('p', { class: 'muted' }, 'no values'));
  } catch (err) {
    if (err.name !== 'AbortError') box.replaceChildren(errorBox(err));
  }
}

/** Rows × columns the heat map views the tensor as: dims[0] × the rest; one row for 1-D. */
function matrixShape(dims) {
  if (dims.length <= 1) return { rows: 1, cols: dims[0] ?? 1 };
  return { rows: dims[0], cols: dims.slice(1).reduce((a, b) => a * b, 1) };
}

async function loadHeatmap(t, box, ctx) {
  const { rows, cols } = matrixShape(t.dims ?? []);
  if (rows === 0 || cols === 0) {
    box.replaceChildren(el('p', { class: 'muted' }, 'the tensor is empty'));
    return;
  }
  try {
    const map = await api('heatmap', {
      name: t.name, index: t.index, width: Math.min(HEATMAP_CELLS, cols), height: Math.min(HEATMAP_CELLS, rows),
    }, { signal: ctx.signal });
    const note = `${formatInt(map.rows)} rows × ${formatInt(map.cols)} columns in ${map.height} × ${map.width} cells` +
      (map.sampled_rows !== undefined ? `, ${formatInt(map.sampled_rows)} rows sampled` : '');
    box.replaceChildren(el('p', { class: 'muted small' }, note), drawHeatmap(map));
  } catch (err) {
    if (err.name !== 'AbortError') box.replaceChildren(errorBox(err));
  }
}
