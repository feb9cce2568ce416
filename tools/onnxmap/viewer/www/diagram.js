// The node page's neighbourhood diagram: boxes in layers (distance -2..2 from the node), each
// layer a column, left to right, ordered inside a layer by the barycentre of their
// predecessors to cut crossings, joined by curved arrows with optional labels. (The graph
// page draws with graphdraw.js, laid out by the server.)

import { svgEl } from './dom.js';
import { clip } from './draw.js';

let diagramCount = 0; // makes marker ids unique when a page holds several diagrams
const PAD = 12;

/**
 * Draws a diagram into a new <svg>.
 *   boxes: [{key, layer (integer), lines: [text, ...] (first is the title), title (tooltip),
 *            href (optional link), cls (optional class), attrs (optional attributes of the box),
 *            clipStart (optional: cut long lines after the first at their start, not their end)}]
 *   edges: [{from: key, to: key, label (optional), weight (>= 1, optional), title (optional)}]
 *   options: boxWidth, boxHeight, gapMain (between layers), gapCross (between boxes of a
 *            layer), svgAttrs (attributes of the <svg>).
 */
export function drawDiagram(boxes, edges, options) {
  const o = { boxWidth: 200, boxHeight: 60, gapMain: 48, gapCross: 16, ...options };
  const byKey = new Map(boxes.map((b) => [b.key, b]));
  const usable = edges.filter((e) => byKey.has(e.from) && byKey.has(e.to) && e.from !== e.to);
  const layers = orderLayers(boxes, usable);
  const placed = placeColumns(layers, o);
  diagramCount += 1;
  const markerId = `arrow-${diagramCount}`;
  const svg = svgEl('svg', {
    class: 'diagram', width: placed.width, height: placed.height,
    viewBox: `0 0 ${placed.width} ${placed.height}`, ...o.svgAttrs,
  });
  svg.append(svgEl('defs', null, svgEl('marker', {
    id: markerId, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 8, markerHeight: 8,
    markerUnits: 'userSpaceOnUse', orient: 'auto-start-reverse',
  }, svgEl('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-head' }))));
  const edgeLayer = svgEl('g', { class: 'edges' });
  const labelLayer = svgEl('g', { class: 'edge-labels' });
  for (const edge of usable) drawEdge(edge, placed.at, markerId, edgeLayer, labelLayer);
  const boxLayer = svgEl('g', { class: 'boxes' });
  for (const box of boxes) boxLayer.append(drawBox(box, placed.at.get(box.key), o));
  svg.append(edgeLayer, boxLayer, labelLayer);
  return svg;
}

/**
 * Boxes grouped by layer (ascending), each layer ordered by the mean slot of its predecessors
 * in earlier layers (boxes without one keep their slot in the input order).
 */
function orderLayers(boxes, edges) {
  const byLayer = new Map();
  for (const box of boxes) {
    if (!byLayer.has(box.layer)) byLayer.set(box.layer, []);
    byLayer.get(box.layer).push(box);
  }
  const predecessors = new Map(boxes.map((b) => [b.key, []]));
  for (const e of edges) predecessors.get(e.to).push(e.from);
  const slot = new Map();
  const layers = [];
  for (const number of [...byLayer.keys()].sort((a, b) => a - b)) {
    const keyed = byLayer.get(number).map((box, i) => {
      const known = predecessors.get(box.key).filter((p) => slot.has(p)).map((p) => slot.get(p));
      const centre = known.length ? known.reduce((a, b) => a + b, 0) / known.length : i;
      return { box, centre, i };
    });
    if (layers.length > 0) keyed.sort((a, b) => a.centre - b.centre || a.i - b.i);
    keyed.forEach(({ box }, i) => slot.set(box.key, i));
    layers.push(keyed.map((k) => k.box));
  }
  return layers;
}

/** Height of n boxes stacked with gaps. */
function stackHeight(n, o) {
  return n * o.boxHeight + Math.max(0, n - 1) * o.gapCross;
}

/** Layers as columns left to right, each column centred vertically. */
function placeColumns(layers, o) {
  const at = new Map();
  const fullHeight = stackHeight(Math.max(1, ...layers.map((l) => l.length)), o);
  layers.forEach((layer, column) => {
    const top = PAD + (fullHeight - stackHeight(layer.length, o)) / 2;
    layer.forEach((box, i) => at.set(box.key, {
      x: PAD + column * (o.boxWidth + o.gapMain), y: top + i * (o.boxHeight + o.gapCross),
      w: o.boxWidth, h: o.boxHeight, band: 0, column,
    }));
  });
  return {
    at,
    width: PAD * 2 + layers.length * o.boxWidth + Math.max(0, layers.length - 1) * o.gapMain,
    height: PAD * 2 + fullHeight,
  };
}

/**
 * A cubic curve with its label: sideways (right side to left side) when the target is in a
 * later column of the same band, else from the bottom of the source to the top of the target.
 */
function drawEdge(edge, at, markerId, edgeLayer, labelLayer) {
  const a = at.get(edge.from);
  const b = at.get(edge.to);
  let p0; let p3; let c1; let c2;
  if (a.band === b.band && b.column > a.column) {
    p0 = [a.x + a.w, a.y + a.h / 2];
    p3 = [b.x, b.y + b.h / 2];
    const bend = Math.max(24, (p3[0] - p0[0]) / 2);
    c1 = [p0[0] + bend, p0[1]];
    c2 = [p3[0] - bend, p3[1]];
  } else {
    p0 = [a.x + a.w / 2, a.y + a.h];
    p3 = [b.x + b.w / 2, b.y];
    const bend = Math.max(24, Math.abs(p3[1] - p0[1]) / 2);
    c1 = [p0[0], p0[1] + bend];
    c2 = [p3[0], p3[1] - bend];
  }
  const width = Math.min(5, 1 + Math.log2(Math.max(1, edge.weight ?? 1)) / 2);
  const path = svgEl('path', {
    d: `M${p0} C${c1} ${c2} ${p3}`, class: 'edge', 'stroke-width': width.toFixed(2), 'marker-end': `url(#${markerId})`,
  });
  if (edge.title) path.append(svgEl('title', null, edge.title));
  edgeLayer.append(path);
  if (edge.label) {
    const mid = [0, 1].map((k) => (p0[k] + 3 * c1[k] + 3 * c2[k] + p3[k]) / 8);
    labelLayer.append(svgEl('text', { x: mid[0], y: mid[1] + 3, 'text-anchor': 'middle', class: 'edge-label' },
      svgEl('title', null, edge.label), clipStart(edge.label, Math.max(6, Math.floor((Math.abs(p3[0] - p0[0]) - 8) / 6)))));
  }
}

/** `text` cut to its last `max` characters (the distinctive end of a tensor name). */
function clipStart(text, max) {
  return text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;
}

/** One box: a rounded rectangle, the title line in bold, the other lines below it. */
function drawBox(box, r, o) {
  const maxChars = Math.floor((o.boxWidth - 14) / 6.8);
  const group = svgEl('g', { class: `box ${box.cls ?? ''}`.trim() },
    svgEl('title', null, box.title ?? box.lines.join('\n')),
    svgEl('rect', { x: r.x, y: r.y, width: r.w, height: r.h, rx: 5 }));
  box.lines.forEach((line, i) => {
    if (18 + i * 15 > r.h) return;
    group.append(svgEl('text', { x: r.x + 8, y: r.y + 17 + i * 15, class: i === 0 ? 'box-title' : 'box-line' },
      i === 0 ? clip(line, maxChars) : (box.clipStart ? clipStart : clip)(line, Math.floor(maxChars * 1.1))));
  });
  if (!box.href) {
    for (const [k, v] of Object.entries(box.attrs ?? {})) group.setAttribute(k, v);
    return group;
  }
  return svgEl('a', { href: box.href, class: 'box-link', ...box.attrs }, group);
}
