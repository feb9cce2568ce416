// The graph page's checks of tests/view/browser_test.mjs: the drawing against /api/graph, its
// geometry measured from the SVG as drawn (no two boxes overlap, no edge passes through a box,
// each edge ends on its boxes), edges between node boxes against the nodes' inputs and outputs,
// a box unfolded in place and folded back, a search that locates a node, a subgraph entered.
// Prints "FIGURE ..." lines (times, box and edge counts) that browser_test.py collects.

import {
  check, api, formatInt, andWait, show, hashOf, texts, waitText, screenshot,
} from './helpers.mjs';

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const count = (page, selector) => page.$$eval(selector, (nodes) => nodes.length);

/**
 * Measures the drawing in the page: box rectangles and sampled edge points, in the SVG's own
 * coordinates (getBBox of each frame, getPointAtLength of each path, through each element's
 * transform). Returns overlaps, edges crossing a box, and edges whose ends miss their boxes.
 */
function measureDrawing(page) {
  return page.evaluate(() => {
    const svg = document.querySelector('[data-testid=graph-drawing]');
    const toSvg = (element) => svg.getScreenCTM().inverse().multiply(element.getScreenCTM());
    const boxes = [...svg.querySelectorAll('[data-testid=graph-box]')].map((g) => {
      const frame = g.querySelector('rect.frame');
      const b = frame.getBBox();
      const m = toSvg(frame);
      return { id: g.dataset.id, x: b.x + m.e, y: b.y + m.f, w: b.width, h: b.height };
    });
    const byId = new Map(boxes.map((b) => [b.id, b]));
    const inside = (p, b, shrink) => p.x > b.x + shrink && p.x < b.x + b.w - shrink &&
      p.y > b.y + shrink && p.y < b.y + b.h - shrink;
    const near = (p, b, d) => p.x >= b.x - d && p.x <= b.x + b.w + d && p.y >= b.y - d && p.y <= b.y + b.h + d;
    const overlaps = [];
    for (let i = 0; i < boxes.length; i += 1) {
      for (let j = i + 1; j < boxes.length; j += 1) {
        const a = boxes[i]; const b = boxes[j];
        if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) overlaps.push([a.id, b.id]);
      }
    }
    const crossings = [];
    const loose = [];
    for (const path of svg.querySelectorAll('[data-testid=graph-edge]')) {
      const m = toSvg(path);
      const length = path.getTotalLength();
      const points = [];
      for (let k = 0; k <= 40; k += 1) {
        const p = path.getPointAtLength((length * k) / 40);
        points.push({ x: p.x + m.e, y: p.y + m.f });
      }
      const from = byId.get(path.dataset.from);
      const to = byId.get(path.dataset.to);
      if (!near(points[0], from, 3) || !near(points[points.length - 1], to, 12)) {
        loose.push([path.dataset.from, path.dataset.to]);
      }
      for (const b of boxes) {
        if (b === from || b === to) continue;
        if (points.some((p) => inside(p, b, 2))) crossings.push([path.dataset.from, path.dataset.to, b.id]);
      }
    }
    return { boxes: boxes.length, edges: svg.querySelectorAll('[data-testid=graph-edge]').length, overlaps, crossings, loose };
  });
}

/** Checks the drawing's geometry and its boxes and edges against `scene` (the API's answer). */
async function checkDrawing(page, m, what, scene) {
  const measured = await measureDrawing(page);
  check(`${m.label} graph ${what}: a box per box of /api/graph`, measured.boxes === scene.boxes.length, { measured: measured.boxes, api: scene.boxes.length });
  check(`${m.label} graph ${what}: an edge per edge of /api/graph`, measured.edges === scene.edges.length, { measured: measured.edges, api: scene.edges.length });
  check(`${m.label} graph ${what}: no two boxes overlap`, measured.overlaps.length === 0, measured.overlaps.slice(0, 5));
  check(`${m.label} graph ${what}: no edge passes through a box`, measured.crossings.length === 0, measured.crossings.slice(0, 5));
  check(`${m.label} graph ${what}: every edge ends on its boxes`, measured.loose.length === 0, measured.loose.slice(0, 5));
  return measured;
}

/** Edges between two single-node boxes of the main graph carry values the first node makes and
 *  the second reads, itself or in its subgraphs (judged by /api/node of both). */
async function checkNodeEdges(m, scene) {
  const nodes = scene.boxes.map((b) => (b.kind === 'node' ? b.node : null));
  const pairs = scene.edges.filter((e) => nodes[e.from] !== null && nodes[e.to] !== null).slice(0, 30);
  const bad = [];
  for (const e of pairs) {
    const [from, to] = await Promise.all([api(m.url, 'node', { id: nodes[e.from] }), api(m.url, 'node', { id: nodes[e.to] })]);
    const made = new Set(from.node.outputs);
    const read = new Set([...to.node.inputs, ...to.node.branch_reads]); // a branch's reads are the node's
    if (!e.values.every((v) => made.has(v.name) && read.has(v.name))) bad.push([nodes[e.from], nodes[e.to], e.values]);
  }
  check(`${m.label} graph: edges between nodes are producer-to-consumer values`, pairs.length === 0 || bad.length === 0, bad.slice(0, 3));
}

/** The first drawing: as /api/graph draws it, timed from the page's request to its drawing. */
async function checkFirstDrawing(page, m, shots) {
  const scene = await api(m.url, 'graph');
  const started = Date.now();
  await show(page, '#/graph', 'graph');
  const ms = Date.now() - started;
  const measured = await checkDrawing(page, m, 'first drawing', scene);
  const ids = await page.$$eval('[data-testid=graph-box]', (all) => all.map((g) => g.dataset.id));
  check(`${m.label} graph: the boxes are /api/graph's`, same(ids, scene.boxes.map((b) => b.id)), { ids: ids.slice(0, 5) });
  const folded = scene.boxes.filter((b) => ['node', 'group', 'repeat', 'range'].includes(b.kind)).length;
  check(`${m.label} graph: at most 150 boxes a level`, scene.clusters.length > 0 || folded <= 150, folded);
  await checkNodeEdges(m, scene);
  await checkFirstScreen(page, m, scene);
  const repeats = scene.boxes.filter((b) => b.kind === 'repeat');
  const repeatTexts = await texts(page, '[data-testid=graph-box][data-kind=repeat] .repeat-count');
  check(`${m.label} graph: repeats say × N`, same(repeatTexts, repeats.map((b) => `× ${formatInt(b.count)}`)), repeatTexts);
  // The "× N" of a repeat never covers its title: the two texts' boxes, as drawn, do not meet.
  const covered = await page.$$eval('[data-testid=graph-box][data-kind=repeat]', (all) => all.filter((g) => {
    const title = g.querySelector('.box-title')?.getBBox();
    const count = g.querySelector('.repeat-count')?.getBBox();
    return title && count && title.x + title.width > count.x && count.x + count.width > title.x
      && title.y + title.height > count.y && count.y + count.height > title.y;
  }).map((g) => g.dataset.id));
  check(`${m.label} graph: no "× N" covers a title`, covered.length === 0, covered);
  console.log(`FIGURE ${m.label} graph: first drawing ${ms} ms, ${measured.boxes} boxes, ${measured.edges} edges, `
    + `${repeats.length} repeats (${repeats.map((b) => `× ${b.count}`).join(', ')}), ${scene.clusters.length} unfolded`);
  await screenshot(page, shots, m.label, 'graph');
  return scene;
}

/** The first screen shows the graph's inputs (each whole, inside the drawing's view), and where
 *  boxes lie out of view, the bar under it counts them by side. */
async function checkFirstScreen(page, m, scene) {
  const seen = await page.evaluate(() => {
    const view = document.querySelector('.drawing-box').getBoundingClientRect();
    const inside = (r) => r.left >= view.left - 1 && r.right <= view.right + 1 && r.top >= view.top - 1 && r.bottom <= view.bottom + 1;
    const boxes = [...document.querySelectorAll('[data-testid=graph-box]')];
    const rest = {};
    for (const b of document.querySelectorAll('[data-testid^=rest-]')) rest[b.dataset.testid.slice(5)] = Number(b.textContent.replace(/[^0-9]/g, ''));
    return {
      inputs: boxes.filter((g) => g.dataset.kind === 'input').map((g) => [g.dataset.id, inside(g.querySelector('.frame').getBoundingClientRect())]),
      outside: boxes.filter((g) => !inside(g.querySelector('.frame').getBoundingClientRect())).length,
      rest,
    };
  });
  const wanted = scene.boxes.filter((b) => b.kind === 'input').length;
  const shown = seen.inputs.filter(([, ok]) => ok).length;
  // As many inputs as fit across the view: all of them, on every model of the tests.
  check(`${m.label} graph: the graph's inputs are on the first screen`, shown === wanted, seen.inputs);
  const counted = Object.values(seen.rest).reduce((a, b) => a + b, 0);
  check(`${m.label} graph: the boxes out of view are counted under the drawing`, seen.outside === 0 ? counted === 0 : counted > 0 && counted <= seen.outside,
    { outside: seen.outside, rest: seen.rest });
}

/** A click on a folded box unfolds it in place; a click on its cluster's label folds it back (to
 *  the clusters the default drawing had: it may unfold a small range itself). */
async function checkUnfold(page, m, shots, scene) {
  const box = scene.boxes.find((b) => b.kind === 'repeat') ?? scene.boxes.find((b) => b.kind === 'group' || b.kind === 'range');
  if (!box) return;
  const clusters = await count(page, '[data-testid=graph-cluster]'); // the default drawing's own
  const started = Date.now();
  await andWait(page, 'graph', () => page.click(`[data-testid=graph-box][data-id=${JSON.stringify(box.id)}]`));
  const ms = Date.now() - started;
  const open = new URLSearchParams(hashOf(page).split('?')[1] ?? '').get('open') ?? '';
  const unfolded = await api(m.url, 'graph', { open });
  check(`${m.label} graph: a click unfolds ${box.id} in place`, unfolded.open.includes(box.id) &&
    await count(page, `[data-testid=graph-cluster][data-id=${JSON.stringify(box.id)}]`) === 1, { hash: hashOf(page), open: unfolded.open });
  const measured = await checkDrawing(page, m, `with ${box.id} unfolded`, unfolded);
  console.log(`FIGURE ${m.label} graph: unfolding ${box.id} ${ms} ms, ${measured.boxes} boxes, ${measured.edges} edges`);
  await screenshot(page, shots, m.label, 'graph-unfolded');
  await andWait(page, 'graph', () => page.click(`[data-testid=graph-cluster][data-id=${JSON.stringify(box.id)}] [data-testid=cluster-fold]`));
  check(`${m.label} graph: a click on the cluster's label folds it`,
    await count(page, '[data-testid=graph-cluster]') === clusters && await count(page, `[data-testid=graph-box][data-id=${JSON.stringify(box.id)}]`) === 1,
    hashOf(page));
}

/** The node list narrows to a search; its first row's link shows the node in the drawing. */
async function checkSearch(page, m, shots, q) {
  const found = await api(m.url, 'nodes', { q, limit: 10 });
  if (found.matched === 0) return;
  await andWait(page, 'graph', () => page.type('[data-testid=node-search]', q));
  await waitText(page, `${m.label} graph: the search ${q} narrows the node list`, '.nodes-card h2 .muted.small',
    `${formatInt(found.matched)} of ${formatInt(found.total)}`);
  const ids = await page.$$eval('[data-testid=node-row]', (rows) => rows.slice(0, 10).map((row) => Number(row.dataset.id)));
  check(`${m.label} graph: the nodes found are /api/nodes?q='s`, same(ids, found.rows.slice(0, ids.length).map((r) => r.id)), { ids });
  check(`${m.label} graph: the search is in the URL`, hashOf(page).includes(`q=${q}`), hashOf(page));
  const id = found.rows[0].id;
  const located = await api(m.url, 'graph', { node: id });
  const started = Date.now();
  await andWait(page, 'graph', () => page.click(`[data-testid=node-row][data-id="${id}"] [data-testid=show-in-graph]`));
  const ms = Date.now() - started;
  const marked = await page.$$eval('[data-testid=graph-box].found', (all) => all.map((g) => {
    const r = g.getBoundingClientRect();
    const view = g.closest('.drawing-box').getBoundingClientRect();
    return { id: g.dataset.id, visible: r.bottom > view.top && r.top < view.bottom && r.right > view.left && r.left < view.right };
  }));
  check(`${m.label} graph: show node ${id} unfolds what holds it and marks it in view`,
    marked.length === 1 && marked[0].id === located.found && marked[0].visible, { marked, found: located.found });
  await checkDrawing(page, m, `locating node ${id}`, located);
  console.log(`FIGURE ${m.label} graph: locating node ${id} ${ms} ms, ${located.open.length} boxes unfolded`);
  await screenshot(page, shots, m.label, 'graph-search');
}

/** A node box's subgraph link draws the subgraph. */
async function checkSubgraph(page, m, shots, scene) {
  const holder = scene.boxes.find((b) => b.kind === 'node' && b.subgraphs?.length);
  if (!holder) return;
  const target = holder.subgraphs[0].graph;
  const sub = await api(m.url, 'graph', { graph: target });
  await show(page, '#/graph', 'graph');
  await andWait(page, 'graph', () => page.click(`[data-testid=graph-box][data-id=${JSON.stringify(holder.id)}] [data-testid=subgraph-link]`));
  check(`${m.label} graph: a subgraph link draws subgraph ${target}`, hashOf(page).includes(`graph=${encodeURIComponent(target)}`), hashOf(page));
  await checkDrawing(page, m, `subgraph ${target}`, sub);
  await screenshot(page, shots, m.label, 'graph-subgraph');
}

export async function checkGraph(page, m, shots) {
  const scene = await checkFirstDrawing(page, m, shots);
  await checkUnfold(page, m, shots, scene);
  const all = await api(m.url, 'nodes', { limit: 10 });
  await waitText(page, `${m.label} graph: the node list counts every node`, '.nodes-card h2 .muted.small',
    `${formatInt(all.matched)} of ${formatInt(all.total)}`);
  await checkSubgraph(page, m, shots, scene);
  const op = ['Softmax', 'Sigmoid', 'Loop', 'Conv', 'MatMul'].find((o) => JSON.stringify(scene).includes(o)) ?? 'Add';
  await show(page, '#/graph', 'graph');
  await checkSearch(page, m, shots, op);
}
