// The summary page (#/summary): the model's metadata, inputs and outputs, counts, sizes by
// dtype and by storage, the external data files (safetensors headers), the op-type histogram,
// functions and the findings of check.

import { el, appendChildren, card, bytesSpan } from './dom.js';
import { formatBytes, formatInt } from './format.js';
import { href } from './url.js';
import { api } from './api.js';
import { dataFilesCard } from './datafiles.js';

export async function render(main, params, ctx) {
  // Asked anew at each visit (the server keeps the summary): whether the file on disk is still
  // the version opened is looked at on each request.
  const s = await api('summary');
  if (!ctx.isCurrent()) return;
  // Checking a big graph takes a second or two: the summary is drawn first, the findings after.
  const warnings = card('Check', { 'data-testid': 'summary-warnings', 'data-state': 'checking' },
    el('p', { class: 'muted' }, 'checking…'));
  api('warnings').then((w) => warnings.replaceWith(warningsCard(w.warnings)))
    .catch((err) => warnings.replaceWith(card('Check', { 'data-testid': 'summary-warnings' }, el('p', null, String(err.message ?? err)))));
  appendChildren(main, [
    el('div', { class: 'page-head' },
      el('h1', { class: 'mono' }, s.source ?? ''),
      el('div', { class: 'muted' }, `graph ${s.graph || '(unnamed)'} · ${formatBytes(s.file_size)} file`)),
    changedNotice(s),
    countTiles(s),
    el('div', { class: 'grid-2' },
      el('div', { class: 'column' }, metadataCard(s), ioCard('Inputs', 'summary-inputs', s.inputs),
        ioCard('Outputs', 'summary-outputs', s.outputs), warnings, functionsCard(s.functions)),
      el('div', { class: 'column' }, dtypeCard(s.by_dtype), storageCard(s.by_storage),
        dataFilesCard(s.data_files), opsCard(s.op_types)))]);
  ctx.ready();
}

/** Says that a file behind the model was replaced or written since the viewer opened it. */
function changedNotice(s) {
  const changed = s.changed_on_disk ?? [];
  if (changed.length === 0) return null;
  const modified = s.file_modified ? ` (modified ${s.file_modified})` : '';
  return el('p', { class: 'notice', 'data-testid': 'summary-changed' },
    `The file on disk has changed since it was opened: showing the version opened at ${s.opened_at}${modified}. ` +
    `Changed: ${changed.join(', ')}. Restart the viewer to see the new version.`);
}

function countTiles(s) {
  const tile = (label, value, title) => el('div', { class: 'tile', title },
    el('div', { class: 'tile-value num' }, value), el('div', { class: 'tile-label' }, label));
  // Nodes in three parts, none counted twice (api.md); the parts a model has none of are left out.
  const nodesTitle = `${formatInt(s.nodes)} in the main graph, ${formatInt(s.subgraph_nodes)} in its subgraphs (If, Loop, Scan bodies), ${formatInt(s.function_nodes)} in functions`;
  return el('div', { class: 'tiles' },
    tile('tensors', formatInt(s.tensors)),
    tile('parameters', formatInt(s.parameters)),
    tile('tensor bytes', formatBytes(s.tensor_bytes), `${formatInt(s.tensor_bytes)} bytes`),
    tile('nodes', formatInt(s.nodes), nodesTitle),
    s.subgraph_nodes > 0 ? tile('nodes in subgraphs', formatInt(s.subgraph_nodes), nodesTitle) : null,
    s.function_nodes > 0 ? tile('nodes in functions', formatInt(s.function_nodes), nodesTitle) : null,
    tile('file size', formatBytes(s.file_size), `${formatInt(s.file_size)} bytes`));
}

/** A two-column key/value table; rows whose value is empty are left out. */
function keyValueTable(rows, attrs) {
  const body = rows
    .filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([key, value]) => el('tr', null, el('th', null, key), el('td', null, value)));
  return el('table', { class: 'kv', ...attrs }, el('tbody', null, body));
}

function metadataCard(s) {
  const ir = s.onnx_release ? `${s.ir_version} (ONNX ${s.onnx_release})` : `${s.ir_version ?? '—'}`;
  const opsets = Object.entries(s.opset_import ?? {}).map(([domain, version]) => `${domain} ${version}`).join(', ');
  const producer = [s.producer_name, s.producer_version].filter(Boolean).join(' ');
  const props = Object.entries(s.metadata_props ?? {}).map(([key, value]) => [key, el('span', { class: 'mono wrap' }, value)]);
  const doc = s.doc_string ? el('pre', { class: 'doc' }, s.doc_string) : null;
  const rows = [
    ['IR version', ir], ['opsets', el('span', { class: 'mono' }, opsets || '—')],
    ['producer', producer || '—'], ['domain', s.domain || '—'],
    ['model version', s.model_version ?? '—'], ['graph', el('span', { class: 'mono' }, s.graph || '(unnamed)')],
    ['doc string', doc ?? '—'],
  ];
  const propsBlock = props.length
    ? [el('h3', null, 'metadata_props'), keyValueTable(props)]
    : [el('p', { class: 'muted small' }, 'no metadata_props')];
  return card('Metadata', { 'data-testid': 'summary-metadata' }, keyValueTable(rows), propsBlock);
}

function ioCard(title, testid, list) {
  const items = list ?? [];
  const body = items.map((io) => el('tr', null,
    el('td', { class: 'mono name' }, io.name), el('td', { class: 'mono' }, io.type ?? '')));
  return card(`${title} (${items.length})`, { 'data-testid': testid },
    items.length
      ? el('div', { class: 'scroll-box' }, el('table', { class: 'data' },
        el('thead', null, el('tr', null, el('th', null, 'name'), el('th', null, 'type'))), el('tbody', null, body)))
      : el('p', { class: 'muted' }, 'none'));
}

/** A bar cell: a bar whose length is value / max. */
function barCell(value, max) {
  const bar = el('div', { class: 'bar' });
  bar.style.width = `${max > 0 ? Math.max(0.5, (value / max) * 100).toFixed(2) : 0}%`;
  return el('td', { class: 'bar-cell' }, bar);
}

function dtypeCard(byDtype) {
  const entries = Object.entries(byDtype ?? {}).sort((a, b) => b[1].bytes - a[1].bytes);
  const max = Math.max(0, ...entries.map(([, v]) => v.bytes));
  const rows = entries.map(([dtype, v]) => el('tr', null,
    el('td', { class: 'mono' }, dtype), el('td', { class: 'num' }, formatInt(v.tensors)),
    el('td', { class: 'num' }, formatInt(v.elements)), el('td', { class: 'num' }, bytesSpan(v.bytes)), barCell(v.bytes, max)));
  return card('Size by dtype', { 'data-testid': 'summary-dtypes' }, el('table', { class: 'data' },
    el('thead', null, el('tr', null, el('th', null, 'dtype'), el('th', { class: 'num' }, 'tensors'),
      el('th', { class: 'num' }, 'elements'), el('th', { class: 'num' }, 'bytes'), el('th', null, ''))),
    el('tbody', null, rows.length ? rows : el('tr', null, el('td', { colspan: 5, class: 'muted' }, 'no tensors')))));
}

function storageCard(byStorage) {
  const entries = Object.entries(byStorage ?? {}).sort((a, b) => b[1].bytes - a[1].bytes);
  const max = Math.max(0, ...entries.map(([, v]) => v.bytes));
  const rows = entries.map(([storage, v]) => el('tr', null,
    el('td', { class: 'mono name' }, storage), el('td', { class: 'num' }, formatInt(v.tensors)),
    el('td', { class: 'num' }, bytesSpan(v.bytes)), barCell(v.bytes, max)));
  return card('Size by storage', { 'data-testid': 'summary-storage' }, el('table', { class: 'data' },
    el('thead', null, el('tr', null, el('th', null, 'storage'), el('th', { class: 'num' }, 'tensors'),
      el('th', { class: 'num' }, 'bytes'), el('th', null, ''))),
    el('tbody', null, rows.length ? rows : el('tr', null, el('td', { colspan: 4, class: 'muted' }, 'no tensors')))));
}

function opsCard(opTypes) {
  const entries = Object.entries(opTypes ?? {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const max = Math.max(0, ...entries.map(([, n]) => n));
  // Keys are "domain.Op" outside ai.onnx; an op type has no ".", so the search uses the tail.
  const rows = entries.map(([op, n]) => el('tr', null,
    el('td', { class: 'mono' }, el('a', { href: href.nodes(op.slice(op.lastIndexOf('.') + 1)), title: `search nodes for ${op}` }, op)),
    el('td', { class: 'num' }, formatInt(n)), barCell(n, max)));
  return card(`Op types (${entries.length})`, { 'data-testid': 'summary-ops' },
    el('div', { class: 'scroll-box tall' }, el('table', { class: 'data' },
      el('thead', null, el('tr', null, el('th', null, 'op type'), el('th', { class: 'num' }, 'nodes'), el('th', null, ''))),
      el('tbody', null, rows.length ? rows : el('tr', null, el('td', { colspan: 3, class: 'muted' }, 'no nodes'))))));
}

function functionsCard(functions) {
  const list = functions ?? [];
  if (list.length === 0) return card('Functions', null, el('p', { class: 'muted' }, 'none'));
  const rows = list.map((f) => el('tr', null, el('td', { class: 'mono' }, f.domain ?? ''),
    el('td', { class: 'mono name' }, f.name ?? ''), el('td', { class: 'num' }, formatInt(f.nodes))));
  return card(`Functions (${list.length})`, null, el('div', { class: 'scroll-box' }, el('table', { class: 'data' },
    el('thead', null, el('tr', null, el('th', null, 'domain'), el('th', null, 'name'), el('th', { class: 'num' }, 'nodes'))),
    el('tbody', null, rows))));
}

function warningsCard(warnings) {
  const list = warnings ?? [];
  return card(`Check (${list.length ? `${list.length} warning${list.length === 1 ? '' : 's'}` : 'clean'})`,
    { 'data-testid': 'summary-warnings', 'data-state': 'done' },
    list.length
      ? el('ul', { class: 'warnings scroll-box' }, list.map((w) => el('li', null, w)))
      : el('p', { class: 'ok' }, 'no warnings'));
}
