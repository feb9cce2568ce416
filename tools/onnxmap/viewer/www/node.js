// One node's page (#/node/<id>), from /api/node: op type, name, domain, doc string, the
// attributes, inputs and outputs (initializers link to their tensor page, producers and
// consumers from the neighbourhood link to their node page), the neighbourhood diagram
// (distance -2..2 in columns, left to right), where the graph page draws it (inside which node,
// shown in which others; what is drawn inside it) and the subgraphs of If/Loop/Scan.

import { el, appendChildren, card } from './dom.js';
import { formatInt, formatValue, nodeLabel } from './format.js';
import { href, queryString } from './url.js';
import { api } from './api.js';
import { drawDiagram } from './diagram.js';

const ATTRIBUTE_TEXT_MAX = 600;
const READERS_SHOWN = 8; // consumer links listed beside an output

export async function render(main, params, ctx) {
  const graph = params.graph ?? '';
  const answer = await api('node', { id: params.id, graph }, { signal: ctx.signal });
  const node = answer.node ?? {};
  const links = linksOf(node, answer, graph);
  appendChildren(main, [
    el('div', { class: 'page-head' },
      el('div', { class: 'kicker' }, `node ${node.id}${graph ? ` of graph ${graph}` : ''} · `, el('a', { href: href.graphNode(node.id, graph), 'data-testid': 'show-in-graph' }, 'show in the graph')),
      el('h1', { class: 'mono wrap' },
        el('span', { class: 'op-badge', 'data-testid': 'node-op' }, node.op_type),
        ' ', el('span', { 'data-testid': 'node-name' }, nodeLabel(node))),
      node.domain ? el('div', { class: 'muted mono' }, `domain ${node.domain}`) : null),
    neighbourhoodCard(node, answer.neighbourhood ?? { nodes: [], edges: [] }, graph),
    drawingCard(answer.drawing, graph),
    el('div', { class: 'grid-2' },
      el('div', { class: 'column' },
        ioCard('Inputs', 'node-inputs', node.inputs ?? [], (name) => inputDetail(name, links)),
        // What its branches or body read of the graph around it: drawn as its inputs.
        node.branch_reads?.length
          ? ioCard('Read by its subgraphs', 'node-branch-reads', node.branch_reads, (name) => inputDetail(name, links))
          : null,
        ioCard('Outputs', 'node-outputs', node.outputs ?? [], (name) => outputDetail(name, links))),
      el('div', { class: 'column' }, attributesCard(node.attributes ?? []),
        node.doc_string ? card('Doc string', null, el('pre', { class: 'doc' }, node.doc_string)) : null)),
    subgraphsCard(graph ? `${graph}/${node.id}` : node.id, node.subgraphs ?? [])]);
  ctx.ready();
}

/** Lookups for the input and output lists: tensors, graph inputs/outputs, producers, consumers. */
function linksOf(node, answer, graph) {
  const byId = new Map((answer.neighbourhood?.nodes ?? []).map((n) => [String(n.id), n]));
  const producers = new Map();
  const consumers = new Map();
  for (const e of answer.neighbourhood?.edges ?? []) {
    if (String(e.to) === String(node.id) && byId.has(String(e.from))) producers.set(e.tensor, byId.get(String(e.from)));
    if (String(e.from) === String(node.id) && byId.has(String(e.to))) {
      if (!consumers.has(e.tensor)) consumers.set(e.tensor, []);
      consumers.get(e.tensor).push(byId.get(String(e.to)));
    }
  }
  return {
    tensors: new Set(answer.tensors ?? []),
    graphInputs: new Set(answer.graph_inputs ?? []),
    graphOutputs: new Set(answer.graph_outputs ?? []),
    producers, consumers, graph,
  };
}

function nodeLink(n, graph) {
  return el('a', { href: href.node(n.id, graph), class: 'mono', 'data-testid': 'node-link', title: `${n.op_type} ${nodeLabel(n)}` },
    `${n.op_type} ${nodeLabel(n)}`);
}

function inputDetail(name, links) {
  if (name === '') return [el('span', { class: 'muted' }, '(omitted optional input)')];
  const parts = [];
  if (links.tensors.has(name)) {
    parts.push(el('a', { href: href.tensor(name), class: 'mono', 'data-testid': 'tensor-link' }, name), el('span', { class: 'tag' }, 'initializer'));
  } else {
    parts.push(el('span', { class: 'mono' }, name));
  }
  if (links.graphInputs.has(name)) parts.push(el('span', { class: 'tag' }, 'graph input'));
  const producer = links.producers.get(name);
  if (producer) parts.push(el('span', { class: 'from' }, 'from ', nodeLink(producer, links.graph)));
  return parts;
}

function outputDetail(name, links) {
  if (name === '') return [el('span', { class: 'muted' }, '(omitted optional output)')];
  const parts = [el('span', { class: 'mono' }, name)];
  if (links.graphOutputs.has(name)) parts.push(el('span', { class: 'tag' }, 'graph output'));
  const readers = links.consumers.get(name) ?? [];
  const shown = readers.slice(0, READERS_SHOWN).flatMap((n, i) => (i ? [', ', nodeLink(n, links.graph)] : [nodeLink(n, links.graph)]));
  const more = readers.length > READERS_SHOWN ? ` and ${formatInt(readers.length - READERS_SHOWN)} more in the neighbourhood` : '';
  if (readers.length) parts.push(el('span', { class: 'from' }, 'to ', shown, more));
  return parts;
}

function ioCard(title, testid, names, detail) {
  const rows = names.map((name, i) => el('li', null, el('span', { class: 'io-index num' }, i), el('div', { class: 'io-body' }, detail(name))));
  return card(`${title} (${names.length})`, { 'data-testid': testid },
    rows.length ? el('ol', { class: 'io-list' }, rows) : el('p', { class: 'muted' }, 'none'));
}

/** An attribute value as text: strings as they are, numbers formatted, the rest as JSON. */
function attributeText(value) {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return formatValue(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'number')) return `[${value.map(formatValue).join(', ')}]`;
  return JSON.stringify(value);
}

function attributesCard(attributes) {
  const rows = attributes.map((a) => {
    const text = attributeText(a.value) ?? '';
    const shown = text.length > ATTRIBUTE_TEXT_MAX ? `${text.slice(0, ATTRIBUTE_TEXT_MAX)}…` : text;
    return el('tr', null, el('td', { class: 'mono' }, a.name), el('td', { class: 'mono muted' }, a.type ?? ''),
      el('td', { class: 'mono wrap', title: text.length > ATTRIBUTE_TEXT_MAX ? `${text.length} characters` : null }, shown));
  });
  return card(`Attributes (${attributes.length})`, { 'data-testid': 'node-attributes' },
    rows.length
      ? el('table', { class: 'data' }, el('thead', null, el('tr', null, el('th', null, 'name'), el('th', null, 'type'), el('th', null, 'value'))),
        el('tbody', null, rows))
      : el('p', { class: 'muted' }, 'none'));
}

/** Edges merged by (from, to): one arrow per pair, labelled with its tensors. */
function mergedEdges(edges) {
  const pairs = new Map();
  for (const e of edges) {
    const key = `${e.from}\u0000${e.to}`;
    if (!pairs.has(key)) pairs.set(key, { from: String(e.from), to: String(e.to), tensors: [] });
    pairs.get(key).tensors.push(e.tensor);
  }
  // A value read by many nodes is labelled once, on its first edge.
  const labelled = new Set();
  return [...pairs.values()].map((p) => {
    const label = p.tensors.join(', ');
    const first = !labelled.has(`${p.from}\u0000${label}`);
    labelled.add(`${p.from}\u0000${label}`);
    return { from: p.from, to: p.to, weight: p.tensors.length, label: first ? label : '', title: p.tensors.join('\n') };
  });
}

function neighbourhoodCard(node, hood, graph) {
  const boxes = (hood.nodes ?? []).map((n) => ({
    key: String(n.id), layer: n.distance, lines: [n.op_type, nodeLabel(n)], clipStart: true,
    title: `${n.op_type} ${nodeLabel(n)}\nnode ${n.id}, distance ${n.distance}`,
    href: href.node(n.id, graph), cls: String(n.id) === String(node.id) ? 'centre' : n.distance < 0 ? 'producer' : 'consumer',
    attrs: { 'data-testid': 'neighbour', 'data-id': n.id },
  }));
  const svg = drawDiagram(boxes, mergedEdges(hood.edges ?? []), {
    boxWidth: 160, boxHeight: 42, gapMain: 104, gapCross: 10,
    svgAttrs: { 'data-testid': 'node-neighbourhood' },
  });
  const box = el('div', { class: 'diagram-box hood' }, svg);
  // Once laid out, scroll a wide or tall diagram so that the centre node is in view.
  requestAnimationFrame(() => {
    const centre = svg.querySelector('.box.centre rect');
    if (!centre) return;
    const r = centre.getBBox();
    box.scrollLeft = r.x + r.width / 2 - box.clientWidth / 2;
    box.scrollTop = r.y + r.height / 2 - box.clientHeight / 2;
  });
  return card('Neighbourhood: producers left, consumers right, two steps each way', { class: 'card hood-card' }, box);
}

/** Where the graph page draws the node: inside another (and shown in which others, for a weight
 * preparation several nodes read), and the nodes drawn inside it, "shared" where another hosts
 * them. Nothing for a node drawn as its own box with nothing inside. */
function drawingCard(drawing, graph) {
  if (!drawing || (!drawing.in && !drawing.inside?.length)) return null;
  const links = (nodes) => nodes.flatMap((n, i) => (i ? [', ', nodeLink(n, graph)] : [nodeLink(n, graph)]));
  const rows = [];
  if (drawing.in) {
    rows.push(el('p', { 'data-testid': 'drawn-in' }, 'Drawn inside ', nodeLink(drawing.in, graph),
      drawing.also_in?.length ? [', and shown inside ', links(drawing.also_in), ', which read it too'] : []));
  }
  if (drawing.inside?.length) {
    rows.push(el('p', { class: 'muted' }, 'Drawn inside it:'), el('ul', { 'data-testid': 'drawn-inside' }, drawing.inside.map((n) =>
      el('li', null, nodeLink(n, graph), n.shared ? [' ', el('span', { class: 'tag', title: 'drawn inside another node that reads it too, and shown here' }, 'shared')] : null))));
  }
  return card('On the graph page', { 'data-testid': 'node-drawing' }, rows);
}

/** The graph page's path of each subgraph: "ID.attribute", "ID.attribute.K" for GRAPHS. */
function subgraphPaths(id, subgraphs) {
  const counts = new Map();
  for (const g of subgraphs) counts.set(g.attribute, (counts.get(g.attribute) ?? 0) + 1);
  const seen = new Map();
  return subgraphs.map((g) => {
    const k = seen.get(g.attribute) ?? 0;
    seen.set(g.attribute, k + 1);
    return counts.get(g.attribute) > 1 || g.many ? `${id}.${g.attribute}.${k}` : `${id}.${g.attribute}`;
  });
}

function subgraphsCard(id, subgraphs) {
  if (subgraphs.length === 0) return null;
  const paths = subgraphPaths(id, subgraphs);
  return card(`Subgraphs (${subgraphs.length})`, { 'data-testid': 'node-subgraphs' }, subgraphs.map((g, i) => {
    const ops = g.ops ?? [];
    const rows = ops.map((op) => el('tr', null, el('td', { class: 'mono' }, op.op_type), el('td', { class: 'mono' }, op.name ?? ''),
      el('td', { class: 'mono muted' }, (op.inputs ?? []).join(', ')), el('td', { class: 'mono muted' }, (op.outputs ?? []).join(', '))));
    const note = ops.length < g.nodes ? ` (first ${formatInt(ops.length)} shown)` : '';
    return el('details', { class: 'subgraph', open: subgraphs.length <= 2 },
      el('summary', null, el('span', { class: 'mono' }, `${g.attribute}: ${g.name || '(unnamed)'}`),
        el('span', { class: 'muted' }, ` ${formatInt(g.nodes)} nodes${note} · `),
        el('a', { href: `#/graph${queryString({ graph: paths[i] })}`, 'data-testid': 'draw-subgraph' }, 'draw it')),
      el('div', { class: 'scroll-box' }, el('table', { class: 'data compact' },
        el('thead', null, el('tr', null, el('th', null, 'op type'), el('th', null, 'name'), el('th', null, 'inputs'), el('th', null, 'outputs'))),
        el('tbody', null, rows))));
  }));
}
