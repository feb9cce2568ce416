// The summary page's card of external data files: each file the model keeps tensors in, and for
// a safetensors file its header (metadata and entries, each beside the model's tensor that points
// at it), fetched from /api/safetensors when opened.

import { el, card, bytesSpan, errorBox } from './dom.js';
import { formatBytes, formatDims, formatInt } from './format.js';
import { href } from './url.js';
import { api } from './api.js';

const HEADER_ROWS = 1000;  // entries shown, the API's most

export function dataFilesCard(files) {
  const list = files ?? [];
  if (list.length === 0) return null;
  const rows = list.flatMap((f) => [
    el('tr', { 'data-testid': 'data-file-row' }, el('td', { class: 'mono name' }, f.location), el('td', null, f.format),
      el('td', { class: 'num' }, formatInt(f.tensors)), el('td', { class: 'num' }, bytesSpan(f.size))),
    f.format === 'safetensors' ? el('tr', null, el('td', { colspan: 4 }, headerDetails(f))) : null,
  ]);
  return card(`Data files (${list.length})`, { 'data-testid': 'summary-data-files' },
    el('div', { class: 'scroll-box' }, el('table', { class: 'data' },
      el('thead', null, el('tr', null, el('th', null, 'file'), el('th', null, 'format'),
        el('th', { class: 'num' }, 'tensors'), el('th', { class: 'num' }, 'size'))),
      el('tbody', null, rows))));
}

function headerDetails(f) {
  if (f.error) return el('p', { class: 'notice', 'data-testid': 'safetensors-error' }, `header: ${f.error}`);
  const unused = f.entries_unused ? `, ${formatInt(f.entries_unused)} the model does not point at` : '';
  const details = el('details', { 'data-testid': 'safetensors-header', 'data-file': f.location },
    el('summary', null, `header: ${formatInt(f.entries)} tensors, ${formatBytes(f.header_bytes)}${unused}`));
  details.addEventListener('toggle', () => {
    if (!details.open || details.dataset.loaded) return;
    details.dataset.loaded = 'yes';
    api('safetensors', { file: f.location, limit: HEADER_ROWS })
      .then((h) => { details.append(metadataTable(h.metadata), entriesTable(h)); details.dataset.state = 'done'; })
      .catch((err) => details.append(errorBox(err)));
  });
  return details;
}

function metadataTable(metadata) {
  const rows = Object.entries(metadata ?? {}).map(([key, value]) =>
    el('tr', null, el('th', null, key), el('td', { class: 'mono wrap' }, value)));
  if (rows.length === 0) return el('p', { class: 'muted small' }, 'no __metadata__');
  return el('table', { class: 'kv' }, el('tbody', null, rows));
}

function entriesTable(h) {
  const rows = h.entries.map((e) => el('tr', null,
    el('td', { class: 'mono name' }, e.name), el('td', { class: 'mono' }, e.dtype),
    el('td', { class: 'mono nowrap' }, formatDims(e.shape)),
    el('td', { class: 'num nowrap' }, `${formatInt(e.data_offsets[0])}–${formatInt(e.data_offsets[1])}`),
    el('td', { class: 'mono name' }, e.tensor
      ? el('a', { href: href.tensor(e.tensor.name, e.tensor.index) }, e.tensor.name)
      : el('span', { class: 'muted' }, 'not read'))));
  const more = h.total > h.entries.length
    ? el('p', { class: 'muted small' }, `the first ${formatInt(h.entries.length)} of ${formatInt(h.total)} entries`)
    : null;
  return el('div', null, el('div', { class: 'scroll-box' }, el('table', { class: 'data', 'data-testid': 'safetensors-entries' },
    el('thead', null, el('tr', null, el('th', null, 'name'), el('th', null, 'dtype'), el('th', null, 'shape'),
      el('th', { class: 'num' }, 'data_offsets'), el('th', null, 'model tensor'))),
    el('tbody', null, rows))), more);
}
