// Drawings made by hand: the statistics histogram (SVG), the size treemap (SVG, squarified),
// and the heat map (a <canvas> with a colour legend). Each takes plain data and returns or fills
// an element; none fetches anything.

import { el, svgEl } from './dom.js';
import { formatValue, formatBytes, formatInt } from './format.js';

// ---------------------------------------------------------------------------------------------
// Histogram

/**
 * Draws `counts` (n bins) with `edges` (n + 1 bin edges) as bars into a new <svg
 * data-testid="histogram">, one <rect data-testid="histogram-bar"> per bin (zero height for an
 * empty bin). Bins are drawn evenly wide; ticks label some of the edges. `log` plots
 * log10(1 + count).
 */
export function drawHistogram(counts, edges, { log = false, width = 720, height = 220 } = {}) {
  const margin = { left: 76, right: 16, top: 10, bottom: 36 };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const scale = (c) => (log ? Math.log10(1 + c) : c);
  const top = Math.max(1e-9, ...counts.map(scale));
  const barWidth = plotWidth / Math.max(1, counts.length);
  const svg = svgEl('svg', {
    'data-testid': 'histogram', class: 'histogram', width, height, viewBox: `0 0 ${width} ${height}`,
    role: 'img', 'aria-label': 'histogram of the values',
  });
  counts.forEach((count, i) => {
    const h = (scale(count) / top) * plotHeight;
    const range = `[${formatValue(edges[i])}, ${formatValue(edges[i + 1])})`;
    svg.append(svgEl('rect', {
      'data-testid': 'histogram-bar', class: 'hbar',
      x: margin.left + i * barWidth + 0.5, y: margin.top + plotHeight - h,
      width: Math.max(0.5, barWidth - 1), height: h,
    }, svgEl('title', null, `${range}: ${formatInt(count)}`)));
  });
  svg.append(histogramAxes(counts.length, edges, { margin, plotWidth, plotHeight, barWidth, log, top }));
  return svg;
}

function histogramAxes(bins, edges, { margin, plotWidth, plotHeight, barWidth, log, top }) {
  const axes = svgEl('g', { class: 'axis' });
  const baseY = margin.top + plotHeight;
  axes.append(svgEl('line', { x1: margin.left, x2: margin.left + plotWidth, y1: baseY, y2: baseY }));
  axes.append(svgEl('line', { x1: margin.left, x2: margin.left, y1: margin.top, y2: baseY }));
  const tickCount = Math.min(bins, 6);
  for (let t = 0; t <= tickCount; t += 1) {
    const edgeIndex = Math.round((t * bins) / Math.max(1, tickCount));
    const x = margin.left + edgeIndex * barWidth;
    axes.append(svgEl('line', { x1: x, x2: x, y1: baseY, y2: baseY + 4 }));
    const anchor = t === 0 ? 'start' : t === tickCount ? 'end' : 'middle';
    axes.append(svgEl('text', { x, y: baseY + 17, 'text-anchor': anchor }, formatValue(edges[edgeIndex])));
  }
  const topLabel = log ? formatInt(Math.round(10 ** top - 1)) : formatInt(top);
  axes.append(svgEl('text', { x: margin.left - 6, y: margin.top + 9, 'text-anchor': 'end' }, topLabel));
  axes.append(svgEl('text', { x: margin.left - 6, y: baseY, 'text-anchor': 'end' }, '0'));
  axes.append(svgEl('text', { x: margin.left + plotWidth, y: baseY + 32, 'text-anchor': 'end', class: 'axis-title' },
    log ? 'value (counts on a log scale)' : 'value'));
  return axes;
}

// ---------------------------------------------------------------------------------------------
// Treemap

/** Worst aspect ratio of a row of areas laid along a side of length `side`. */
function worstRatio(areas, side) {
  const sum = areas.reduce((a, b) => a + b, 0);
  const largest = Math.max(...areas);
  const smallest = Math.min(...areas);
  const s2 = side * side;
  return Math.max((s2 * largest) / (sum * sum), (sum * sum) / (s2 * smallest));
}

/**
 * Squarified treemap (Bruls, Huizing, van Wijk): lays `values` (positive, sorted largest first)
 * into the rectangle w × h. Returns one {x, y, w, h} per value, in the same order.
 */
export function squarify(values, w, h) {
  const total = values.reduce((a, b) => a + b, 0);
  const areas = values.map((v) => (v / total) * w * h);
  const rects = [];
  let box = { x: 0, y: 0, w, h };
  let start = 0;
  while (start < areas.length) {
    const side = Math.min(box.w, box.h);
    let end = start + 1;
    while (end < areas.length &&
           worstRatio(areas.slice(start, end + 1), side) <= worstRatio(areas.slice(start, end), side)) {
      end += 1;
    }
    box = layRow(areas.slice(start, end), box, rects);
    start = end;
  }
  return rects;
}

/** Places a row of areas along the short side of `box`; returns the box that remains. */
function layRow(areas, box, rects) {
  const sum = areas.reduce((a, b) => a + b, 0);
  if (box.w >= box.h) {
    const columnWidth = sum / box.h;
    let y = box.y;
    for (const area of areas) {
      const hh = area / columnWidth;
      rects.push({ x: box.x, y, w: columnWidth, h: hh });
      y += hh;
    }
    return { x: box.x + columnWidth, y: box.y, w: box.w - columnWidth, h: box.h };
  }
  const rowHeight = sum / box.w;
  let x = box.x;
  for (const area of areas) {
    const ww = area / rowHeight;
    rects.push({ x, y: box.y, w: ww, h: rowHeight });
    x += ww;
  }
  return { x: box.x, y: box.y + rowHeight, w: box.w, h: box.h - rowHeight };
}

/** A soft colour for a name, stable across renders. */
function colourOf(name, leaf) {
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  const hue = hash % 360;
  return leaf ? `hsl(${hue} 35% 80%)` : `hsl(${hue} 45% 70%)`;
}

const HEADER = 16; // height of a nested group's header strip

/** Whether a group's box is big enough to hold its children under a header strip. */
function canNest(r) {
  return r.w >= 60 && r.h >= HEADER + 28;
}

/**
 * The boxes of a treemap: `children` ({name, prefix, bytes, tensors, leaf, tensor, others,
 * children?}) squarified into `box`, largest first, children without bytes left out. A child
 * whose own `children` are known and whose box is big enough becomes a header box with its
 * children laid out inside, recursively. Returns [{child, rect, header}] in drawing order.
 */
export function treemapLayout(children, box) {
  const shown = children.filter((c) => c.bytes > 0).sort((a, b) => b.bytes - a.bytes);
  if (shown.length === 0 || box.w <= 0 || box.h <= 0) return [];
  const rects = squarify(shown.map((c) => c.bytes), box.w, box.h);
  const out = [];
  shown.forEach((child, i) => {
    const rect = { ...rects[i], x: rects[i].x + box.x, y: rects[i].y + box.y };
    const inner = (child.children ?? []).filter((c) => c.bytes > 0);
    const nested = inner.length > 0 && canNest(rect);
    out.push({ child, rect, header: nested });
    if (nested) out.push(...treemapLayout(inner, { x: rect.x + 2, y: rect.y + HEADER, w: rect.w - 4, h: rect.h - HEADER - 2 }));
  });
  return out;
}

/**
 * Draws the treemap of `children` (see treemapLayout) into a new <svg data-testid="treemap">.
 * `hrefOf(child)` gives the link of a box (null for none).
 */
export function drawTreemap(children, { width, height, hrefOf }) {
  const svg = svgEl('svg', { 'data-testid': 'treemap', class: 'treemap', width, height, viewBox: `0 0 ${width} ${height}` });
  const boxes = treemapLayout(children, { x: 0, y: 0, w: width, h: height });
  if (boxes.length === 0) {
    svg.append(svgEl('text', { x: width / 2, y: height / 2, 'text-anchor': 'middle', class: 'muted' }, 'no bytes here'));
  }
  for (const { child, rect, header } of boxes) svg.append(treemapBox(child, rect, hrefOf(child), header));
  return svg;
}

function treemapTip(child) {
  const count = `${formatInt(child.tensors)} tensor${child.tensors === 1 ? '' : 's'}`;
  const what = child.leaf ? child.tensor ?? child.name : child.others ? `${child.name} in ${child.prefix ?? ''}` : child.prefix ?? child.name;
  return `${what}\n${formatBytes(child.bytes)} (${formatInt(child.bytes)} bytes), ${count}`;
}

/** One rectangle with its name and size; `header` puts both on one line at the top. */
function treemapBox(child, r, link, header) {
  const kind = child.others ? 'others' : child.leaf ? 'leaf' : 'group';
  const fill = child.others ? '#e3e3e3' : colourOf(child.name, child.leaf);
  const group = svgEl('g', { class: `tm-box tm-${kind}${header ? ' tm-header' : ''}`, 'data-name': child.name },
    svgEl('title', null, treemapTip(child)),
    svgEl('rect', { x: r.x, y: r.y, width: Math.max(0, r.w), height: Math.max(0, r.h), fill }));
  if (child.leaf) group.setAttribute('data-tensor', child.tensor ?? child.name);
  else if (!child.others && !child.terminal) group.setAttribute('data-prefix', child.prefix ?? '');
  const maxChars = Math.floor((r.w - 6) / 6.6);
  if (header) {
    group.append(svgEl('text', { x: r.x + 4, y: r.y + 12, class: 'tm-name' }, clip(`${child.name} ${formatBytes(child.bytes)}`, maxChars)));
  } else if (r.h >= 16 && maxChars >= 3) {
    group.append(svgEl('text', { x: r.x + 4, y: r.y + 13, class: 'tm-name' }, clip(child.name, maxChars)));
    if (r.h >= 30) group.append(svgEl('text', { x: r.x + 4, y: r.y + 26, class: 'tm-size' }, clip(formatBytes(child.bytes), maxChars)));
  }
  return link ? svgEl('a', { href: link }, group) : group;
}

/** `text` cut to `max` characters with an ellipsis. */
export function clip(text, max) {
  return text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`;
}

// ---------------------------------------------------------------------------------------------
// Heat map

// Stops of a perceptually ordered dark-blue → teal → yellow scale.
const SCALE_STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
const NO_VALUE_RGB = [200, 200, 200];

/** RGB of t in [0, 1] along SCALE_STOPS. */
function scaleColour(t) {
  const clamped = Math.min(1, Math.max(0, t));
  const position = clamped * (SCALE_STOPS.length - 1);
  const i = Math.min(SCALE_STOPS.length - 2, Math.floor(position));
  const f = position - i;
  return SCALE_STOPS[i].map((c, k) => Math.round(c + (SCALE_STOPS[i + 1][k] - c) * f));
}

/**
 * Draws a heat map answer ({rows, cols, width, height, max, cells}) as a <canvas
 * data-testid="heatmap"> scaled up to about `displaySize` px, with a legend and a readout of
 * the cell under the pointer. Returns the wrapper element.
 */
export function drawHeatmap(map, { displaySize = 512 } = {}) {
  const { width, height, cells } = map;
  const max = map.max ?? 0;
  const canvas = el('canvas', { 'data-testid': 'heatmap', class: 'heatmap', width, height });
  const image = canvas.getContext('2d').createImageData(width, height);
  cells.forEach((value, i) => {
    const rgb = value === null || value === undefined ? NO_VALUE_RGB : scaleColour(max > 0 ? value / max : 0);
    image.data.set([...rgb, 255], i * 4);
  });
  canvas.getContext('2d').putImageData(image, 0, 0);
  // Cells are square when they can be; a map one or a few cells thin is stretched to 24 px.
  const zoom = Math.max(1, Math.min(displaySize / width, displaySize / height, 16));
  canvas.style.width = `${Math.max(24, Math.round(width * zoom))}px`;
  canvas.style.height = `${Math.max(24, Math.round(height * zoom))}px`;
  const readout = el('div', { class: 'heatmap-readout mono' }, 'hover a cell');
  canvas.addEventListener('mousemove', (event) => { readout.textContent = describeCell(map, canvas, event); });
  canvas.addEventListener('mouseleave', () => { readout.textContent = 'hover a cell'; });
  return el('div', { class: 'heatmap-wrap' }, canvas, el('div', { class: 'heatmap-side' }, legend(max), readout));
}

/** "rows a–b, columns c–d: max |v| = x" of the cell under the pointer. */
function describeCell(map, canvas, event) {
  const box = canvas.getBoundingClientRect();
  const cx = Math.min(map.width - 1, Math.max(0, Math.floor(((event.clientX - box.left) / box.width) * map.width)));
  const cy = Math.min(map.height - 1, Math.max(0, Math.floor(((event.clientY - box.top) / box.height) * map.height)));
  const value = map.cells[cy * map.width + cx];
  const span = (cell, cells, total) => {
    const from = Math.floor((cell * total) / cells);
    const to = Math.max(from, Math.floor(((cell + 1) * total) / cells) - 1);
    return from === to ? `${from}` : `${from}–${to}`;
  };
  const where = `rows ${span(cy, map.height, map.rows)}, cols ${span(cx, map.width, map.cols)}`;
  return `${where}: ${value === null || value === undefined ? 'no finite value' : `max |v| = ${formatValue(value)}`}`;
}

function legend(max) {
  const gradient = el('canvas', { class: 'legend-bar', width: 200, height: 1 });
  const context = gradient.getContext('2d');
  for (let x = 0; x < 200; x += 1) {
    context.fillStyle = `rgb(${scaleColour(x / 199).join(',')})`;
    context.fillRect(x, 0, 1, 1);
  }
  return el('div', { class: 'legend' },
    el('div', { class: 'legend-title' }, 'largest |value| per block'),
    gradient,
    el('div', { class: 'legend-ticks mono' }, el('span', null, '0'), el('span', null, formatValue(max))),
    el('div', { class: 'legend-none' }, el('span', { class: 'swatch' }), 'no finite value'));
}
