// Draws one scene of the graph page (/api/graph, laid out by the server) as SVG: clusters
// (unfolded boxes) behind, edges as the server's Bezier curves with arrow heads, boxes on top.
// Text is cut to its box by character count (the server sizes boxes, the page fits the text).
// What the page does on a click is given as callbacks; links are plain <a> elements.

import { svgEl } from './dom.js';
import { formatInt } from './format.js';
import { href, queryString } from './url.js';

const MARGIN = 16;
const LINE = 16;
const TOP = 18; // baseline of a box's first line
const CHAR = 6.7; // average width of a character at 11-12 px, for cutting text to a box
const COUNT_CHAR = 10; // the widest character of a repeat's "× N" (15 px bold, app.css)
const TITLE_CHAR = 7.3; // a character of a box's title (12 px monospace, app.css)

let drawings = 0; // marker ids unique per drawing

/** Op families, for the stripe at a node box's left. */
const FAMILIES = [
  [/^(Conv|ConvTranspose|MatMul|Gemm|MatMulInteger|QLinearConv|QLinearMatMul|Einsum|Attention)/, 'weights'],
  [/^(Relu|LeakyRelu|Sigmoid|Tanh|HardSwish|HardSigmoid|Gelu|Softmax|LogSoftmax|Elu|Selu|Mish|Erf|Softplus)/, 'activation'],
  [/Normalization$|^LRN$|^SkipLayerNormalization/, 'norm'],
  [/^(Reshape|Transpose|Squeeze|Unsqueeze|Flatten|Shape|Gather|Slice|Concat|Split|Expand|Tile|Cast|Resize|Pad|Constant|Identity|Range|ConstantOfShape)/, 'shape'],
  [/^(Add|Sub|Mul|Div|Pow|Sqrt|Neg|Abs|Exp|Log|Max|Min|Where|Equal|Less|Greater|Not|And|Or|ReduceMean|ReduceSum)/, 'math'],
  [/^(If|Loop|Scan)$/, 'control'],
];

function family(op) {
  const bare = op.slice(op.lastIndexOf('.') + 1);
  return FAMILIES.find(([pattern]) => pattern.test(bare))?.[1] ?? 'other';
}

/** `text` cut to `width` pixels, with an ellipsis. */
export function fit(text, width) {
  const max = Math.max(1, Math.floor(width / CHAR));
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function opsText(ops) {
  return (ops ?? []).map((o) => `${o.op} ${formatInt(o.count)}`).join(' · ');
}

function text(x, y, cls, value, width, attrs = {}) {
  return svgEl('text', { x, y, class: cls, ...attrs }, fit(value, width));
}

/** A line naming a value (a weight, a folded constant) and its type, right-aligned. */
function valueLine(x, y, width, label, type, link) {
  const typeText = fit(type ?? '', width * 0.45);
  const nameWidth = width - typeText.length * CHAR - 6;
  const name = text(x, y, 'box-line mono', label, nameWidth);
  const parts = [link ? svgEl('a', { href: link, class: 'weight-link' }, name) : name];
  if (typeText) parts.push(svgEl('text', { x: x + width, y, class: 'box-line type', 'text-anchor': 'end' }, typeText));
  return parts;
}

function nodeLines(box, x, width, graphPath) {
  const lines = [text(x, TOP, 'box-title', box.quantized ? `${box.op} · quantized` : box.op, width)];
  lines.push(text(x, TOP + LINE, 'box-line', box.name || `(unnamed) node ${box.node}`, width));
  let y = TOP + 2 * LINE;
  for (const w of box.weights ?? []) {
    lines.push(...valueLine(x, y, width, w.name, w.type, graphPath ? null : href.tensor(w.name)));
    y += LINE;
  }
  if (box.more_weights) { lines.push(text(x, y, 'box-line muted', `+${formatInt(box.more_weights)} more weights`, width)); y += LINE; }
  for (const c of box.constants ?? []) {
    lines.push(...valueLine(x, y, width, `${c.shared ? '↔ ' : ''}${c.op} ${c.name}`, c.type, null));
    y += LINE;
  }
  if (box.more_constants) { lines.push(text(x, y, 'box-line muted', `+${formatInt(box.more_constants)} more folded`, width)); y += LINE; }
  if (box.subgraphs?.length) {
    let at = x;
    for (const s of box.subgraphs) {
      const label = `⤷ ${s.attribute}`;
      lines.push(svgEl('a', { href: `#/graph${queryString({ graph: s.graph })}`, class: 'subgraph-link', 'data-testid': 'subgraph-link' },
        svgEl('text', { x: at, y, class: 'box-line' }, label)));
      at += (label.length + 1) * CHAR;
    }
  }
  return lines;
}

function foldedLines(box, x, width) {
  const lines = [];
  if (box.kind === 'repeat') {
    // The count keeps its room: the title is cut before it, never drawn under it.
    const count = `× ${formatInt(box.count)}`;
    const room = width - count.length * COUNT_CHAR - 8;
    lines.push(text(x, TOP, 'box-title', box.title, room * (CHAR / TITLE_CHAR)));
    lines.push(svgEl('text', { x: x + width, y: TOP + 4, class: 'repeat-count', 'text-anchor': 'end' }, count));
    lines.push(text(x, TOP + LINE, 'box-line mono', `${box.first} … ${box.last}`, width));
  } else {
    lines.push(text(x, TOP, 'box-title', box.title, width));
    lines.push(text(x, TOP + LINE, 'box-line', `${formatInt(box.nodes)} nodes`, width));
  }
  lines.push(text(x, TOP + 2 * LINE, 'box-line muted', opsText(box.ops), width));
  return lines;
}

function drawBox(box, options) {
  const inner = box.width - 20;
  const x = 12;
  const attrs = {
    class: `gbox ${box.kind}${box.id === options.found ? ' found' : ''}`,
    transform: `translate(${box.x + MARGIN},${box.y + MARGIN})`,
    'data-testid': 'graph-box', 'data-id': box.id, 'data-kind': box.kind,
    'data-x': box.x, 'data-y': box.y, 'data-width': box.width, 'data-height': box.height,
  };
  const g = svgEl('g', attrs);
  // A stack of cards: the blocks behind the first, showing below it (above, they would cover
  // the head of the arrow coming in: edges are drawn beneath the boxes).
  if (box.kind === 'repeat') {
    g.append(svgEl('rect', { x: 6, y: 6, width: box.width, height: box.height, rx: 5, class: 'behind' }));
    g.append(svgEl('rect', { x: 3, y: 3, width: box.width, height: box.height, rx: 5, class: 'behind' }));
  }
  const rx = box.kind === 'input' || box.kind === 'output' ? box.height / 2 : 5;
  g.append(svgEl('rect', { width: box.width, height: box.height, rx, class: 'frame' }));
  let lines;
  if (box.kind === 'node') {
    g.classList.add(`op-${family(box.op)}`);
    g.append(svgEl('rect', { width: 4, height: box.height - 2, x: 1, y: 1, rx: 2, class: 'stripe' }));
    lines = nodeLines(box, x, inner, options.graph);
  } else if (box.kind === 'input' || box.kind === 'output') {
    lines = [text(box.width / 2, TOP, 'box-title', box.name, box.width - 24, { 'text-anchor': 'middle' }),
      text(box.width / 2, TOP + LINE, 'box-line', box.outer ? `from the outer graph${box.type ? ` · ${box.type}` : ''}` : box.type || box.kind, box.width - 24, { 'text-anchor': 'middle' })];
  } else {
    lines = foldedLines(box, x, inner);
  }
  g.append(...lines);
  g.append(svgEl('title', null, boxTitle(box)));
  if (box.kind === 'node') {
    g.addEventListener('click', (event) => { if (!event.target.closest('a')) location.hash = href.node(box.node, options.graph); });
  } else if (['group', 'repeat', 'range'].includes(box.kind)) {
    g.addEventListener('click', () => options.onUnfold(box));
  }
  return g;
}

function boxTitle(box) {
  switch (box.kind) {
    case 'node': return `${box.op} ${box.name || ''}\nnode ${box.node}${box.weights?.length ? `\nweights: ${box.weights.map((w) => `${w.name} ${w.type}`).join(', ')}` : ''}`;
    case 'repeat': return `${box.title}: ${formatInt(box.count)} blocks alike (${box.first} … ${box.last}), ${formatInt(box.nodes)} nodes\nclick: unfold one block`;
    case 'input': case 'output': return `${box.outer ? 'read from the outer graph' : `graph ${box.kind}`} ${box.name}\n${box.type}`;
    default: return `${box.title}\n${formatInt(box.nodes)} nodes: ${opsText(box.ops)}\nclick: unfold`;
  }
}

function edgePath(points) {
  if (!points.length) return '';
  const at = (p) => `${p[0] + MARGIN},${p[1] + MARGIN}`;
  let d = `M${at(points[0])}`;
  for (let k = 1; k + 2 < points.length; k += 3) d += ` C${at(points[k])} ${at(points[k + 1])} ${at(points[k + 2])}`;
  return d;
}

function drawEdge(edge, boxes, markerId) {
  const names = edge.values.map((v) => `${v.name}${v.type ? ` ${v.type}` : ''}`);
  if (edge.count > edge.values.length) names.push(`+${formatInt(edge.count - edge.values.length)} more`);
  return svgEl('path', {
    d: edgePath(edge.points), class: 'gedge', 'marker-end': `url(#${markerId})`,
    'data-testid': 'graph-edge', 'data-from': boxes[edge.from].id, 'data-to': boxes[edge.to].id,
    'stroke-width': Math.min(1 + Math.log2(edge.count), 4),
  }, svgEl('title', null, names.join('\n')));
}

function drawCluster(cluster, options) {
  const g = svgEl('g', {
    class: 'gcluster', transform: `translate(${cluster.x + MARGIN},${cluster.y + MARGIN})`,
    'data-testid': 'graph-cluster', 'data-id': cluster.id,
  });
  g.append(svgEl('rect', { width: cluster.width, height: cluster.height, rx: 8, class: 'frame' }));
  const head = svgEl('g', { class: 'cluster-head', 'data-testid': 'cluster-fold' },
    svgEl('text', { x: 10, y: 16, class: 'cluster-label' }, fit(`▾ ${cluster.label}`, cluster.width - 20)),
    svgEl('title', null, 'click: fold'));
  head.addEventListener('click', () => options.onFold(cluster));
  g.append(head);
  return g;
}

/** The <svg> of `scene`; options: {graph, found, onUnfold(box), onFold(cluster)}. */
export function drawScene(scene, options) {
  drawings += 1;
  const markerId = `garrow-${drawings}`;
  const width = scene.width + 2 * MARGIN;
  const height = scene.height + 2 * MARGIN;
  const svg = svgEl('svg', { class: 'graph-drawing', width, height, viewBox: `0 0 ${width} ${height}`, 'data-testid': 'graph-drawing' });
  svg.append(svgEl('defs', null, svgEl('marker', {
    id: markerId, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, markerUnits: 'userSpaceOnUse', orient: 'auto',
  }, svgEl('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-head' }))));
  const clusters = svgEl('g', { class: 'clusters' }, scene.clusters.map((c) => drawCluster(c, { ...options, found: scene.found })));
  const edges = svgEl('g', { class: 'edges' }, scene.edges.map((e) => drawEdge(e, scene.boxes, markerId)));
  const boxes = svgEl('g', { class: 'boxes' }, scene.boxes.map((b) => drawBox(b, { ...options, found: scene.found })));
  svg.append(clusters, edges, boxes);
  return svg;
}
