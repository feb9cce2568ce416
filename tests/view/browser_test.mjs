// The viewer's pages in Chromium, driven by puppeteer-core: each page of each model is opened,
// and what it shows is checked against the JSON API's own answers (tools/onnxmap/viewer/api.md),
// fetched here. Every page is saved as a PNG; console errors and page errors fail the test.
//
//   node browser_test.mjs CHROMIUM SCREENSHOT_FOLDER LABEL=VIEWER_URL...
//
// Run it from a folder whose node_modules holds puppeteer-core (tests/view/browser_test.py
// installs tests/view/browser/package.json there and starts the viewers).

import path from 'node:path';
import { createRequire } from 'node:module';
import {
  results, check, api, apiStats, formatInt, sameNumber, waitReady, andWait, show, hashOf, texts,
  tableRows, waitText, watchErrors, screenshot,
} from './browser/helpers.mjs';
import { checkGraph } from './browser/graph_checks.mjs';

// An ES import would look for node_modules beside this file: require it from the working folder.
const puppeteer = createRequire(path.join(process.cwd(), 'package.json'))('puppeteer-core');

const [chromium, shots, ...modelArgs] = process.argv.slice(2);
const models = modelArgs.map((arg) => {
  const at = arg.indexOf('=');
  return { label: arg.slice(0, at), url: arg.slice(at + 1) };
});

// As the pages ask (www/stats.js, www/tensor.js).
const STATS_BINS = 64;
const VALUE_COUNT = 64;
const HEATMAP_CELLS = 256;
const DEEP_ROW = 150000; // a row of the tensor table far down (on graph-heavy: page 750)

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const count = (page, selector) => page.$$eval(selector, (nodes) => nodes.length);

async function checkSummary(page, m) {
  const s = await api(m.url, 'summary');
  const tiles = Object.fromEntries(await page.$$eval('.tile', (all) => all.map((tile) =>
    [tile.querySelector('.tile-label').textContent, tile.querySelector('.tile-value').textContent])));
  for (const [label, key] of [['tensors', 'tensors'], ['parameters', 'parameters'], ['nodes', 'nodes']]) {
    check(`${m.label} summary: ${label}`, tiles[label] === formatInt(s[key]), { shown: tiles[label], api: s[key] });
  }
  // The nodes of subgraphs and of functions: a tile each where there are some, none otherwise.
  for (const [label, key] of [['nodes in subgraphs', 'subgraph_nodes'], ['nodes in functions', 'function_nodes']]) {
    const want = s[key] > 0 ? formatInt(s[key]) : undefined;
    check(`${m.label} summary: ${label}`, tiles[label] === want, { shown: tiles[label], api: s[key] });
  }
  for (const [testid, list] of [['summary-inputs', s.inputs], ['summary-outputs', s.outputs]]) {
    const rows = await tableRows(page, `[data-testid=${testid}]`);
    check(`${m.label} summary: ${testid}`, same(rows, list.map((io) => [io.name, io.type])), { rows, api: list });
  }
  const ops = (await tableRows(page, '[data-testid=summary-ops]')).map(([op, n]) => [op, Number(n.replaceAll(',', ''))]);
  check(`${m.label} summary: op types`, same(Object.fromEntries(ops.sort()), Object.fromEntries(Object.entries(s.op_types).sort())),
    { ops, api: s.op_types });
  const dtypes = (await tableRows(page, '[data-testid=summary-dtypes]')).map(([dtype, tensors, elements]) => [dtype, tensors, elements]);
  const apiDtypes = Object.entries(s.by_dtype).map(([dtype, v]) => [dtype, formatInt(v.tensors), formatInt(v.elements)]);
  check(`${m.label} summary: sizes by dtype`, same(dtypes.sort(), apiDtypes.sort()), { dtypes, apiDtypes });
  const storage = (await tableRows(page, '[data-testid=summary-storage]')).map(([kind, tensors]) => [kind, tensors]);
  const apiStorage = Object.entries(s.by_storage).map(([kind, v]) => [kind, formatInt(v.tensors)]);
  check(`${m.label} summary: sizes by storage`, same(storage.sort(), apiStorage.sort()), { storage, apiStorage });
  await checkDataFiles(page, m, s);
  const metadata = await page.$eval('[data-testid=summary-metadata]', (card) => card.textContent);
  check(`${m.label} summary: producer`, metadata.includes(s.producer_name), metadata);
  // A notice where the files on disk are no longer those opened (browser_test.py replaces one
  // model after the viewer opened it), naming each; none elsewhere.
  const notice = await page.$eval('[data-testid=summary-changed]', (n) => n.textContent).catch(() => null);
  const changed = s.changed_on_disk.length > 0;
  check(`${m.label} summary: the notice that the file changed on disk`,
    changed ? notice !== null && notice.includes(`opened at ${s.opened_at}`) && s.changed_on_disk.every((f) => notice.includes(f))
      : notice === null, { notice, api: s.changed_on_disk });

  const { warnings } = await api(m.url, 'warnings');
  await page.waitForSelector('[data-testid=summary-warnings][data-state=done]');
  const shown = await texts(page, '[data-testid=summary-warnings] li');
  check(`${m.label} summary: the warnings of check`, same(shown, warnings), { shown, warnings });
  await screenshot(page, shots, m.label, 'summary');
}

/** The data files card: a row per file of the summary's data_files; each safetensors header,
 * opened, lists /api/safetensors' entries beside the model's tensor that points at each. */
async function checkDataFiles(page, m, s) {
  const rows = await page.$$eval('[data-testid=data-file-row]', (all) => all.map((row) =>
    [...row.children].slice(0, 3).map((cell) => cell.textContent.trim())));
  const want = s.data_files.map((f) => [f.location, f.format, formatInt(f.tensors)]);
  check(`${m.label} summary: the data files`, same(rows, want), { rows, want });
  for (const f of s.data_files.filter((file) => file.format === 'safetensors').slice(0, 2)) {
    const selector = `[data-testid=safetensors-header][data-file="${f.location}"]`;
    await page.click(`${selector} summary`);
    await page.waitForSelector(`${selector}[data-state=done]`, { timeout: 30000 });
    const entries = await tableRows(page, `${selector} [data-testid=safetensors-entries]`);
    const header = await api(m.url, 'safetensors', { file: f.location, limit: 1000 });
    const wantEntries = header.entries.map((e) => [e.name, e.dtype, `[${e.shape.join(', ')}]`,
      `${formatInt(e.data_offsets[0])}–${formatInt(e.data_offsets[1])}`, e.tensor ? e.tensor.name : 'not read']);
    check(`${m.label} summary: the header of ${f.location}`, entries.length > 0 && same(entries, wantEntries),
      { entries: entries.slice(0, 5), want: wantEntries.slice(0, 5) });
  }
}

/** data-name of the tensor table's rows, in order. */
function rowNames(page) {
  return page.$$eval('[data-testid=tensor-row]', (rows) => rows.map((row) => row.dataset.name));
}

async function checkTensors(page, m) {
  const first = await api(m.url, 'tensors', { limit: 20 });
  await show(page, '#/tensors', 'tensors');
  await waitText(page, `${m.label} tensors: count`, '[data-testid=tensors-count]',
    `${formatInt(first.matched)} of ${formatInt(first.total)} tensors`);
  const names = (await rowNames(page)).slice(0, 10);
  const apiNames = first.rows.map((r) => r.name);
  check(`${m.label} tensors: the first rows are /api/tensors'`,
    names.length > 0 && same(names, apiNames.slice(0, names.length)), { names, apiNames });
  const cells = await page.$eval('[data-testid=tensor-row]', (row) =>
    [row.querySelector('.c-dtype').textContent, row.querySelector('.c-dims').textContent]);
  const { dtype, dims } = first.rows[0];
  check(`${m.label} tensors: the first row's dtype and dims`, same(cells, [dtype, `[${dims.join(', ')}]`]), cells);

  const map = await api(m.url, 'treemap', { prefix: '' });
  const boxes = await page.$$eval('[data-testid=treemap] g.tm-box', (all) => all.map((g) => g.dataset.name));
  const top = map.children.filter((c) => c.bytes > 0).map((c) => c.name);
  check(`${m.label} tensors: the treemap draws every top-level group`, top.length > 0 && top.every((name) => boxes.includes(name)),
    { top, boxes: boxes.slice(0, 20) });
  await screenshot(page, shots, m.label, 'tensors');

  const firstRows = [];
  for (const [key, order] of [['bytes', 'desc'], ['bytes', 'asc'], ['name', 'asc'], ['module', 'asc']]) {
    const want = (await api(m.url, 'tensors', { limit: 1, sort: key, order })).rows[0].name;
    await andWait(page, 'tensors', () => page.click(`[data-testid=tensors-header-${key}]`));
    const got = (await rowNames(page))[0];
    const hash = hashOf(page);
    check(`${m.label} tensors: a click on ${key} sorts ${order}`,
      got === want && hash.includes(`sort=${key}`) && hash.includes('order=desc') === (order === 'desc'), { got, want, hash });
    firstRows.push(got);
  }
  check(`${m.label} tensors: sorting changed the first row`, firstRows.some((name) => name !== names[0]), firstRows);
  await checkModules(page, m);

  // A layer's tensors where names say layers, else the first tensor by name.
  const layer = await api(m.url, 'tensors', { limit: 1, filter: '*layers.1*', sort: 'name' });
  const glob = layer.matched > 0 ? '*layers.1*' : `*${names[0]}*`;
  // In the page's order: by module, the last header clicked.
  const filtered = await api(m.url, 'tensors', { limit: 1, filter: glob, sort: 'module' });
  await andWait(page, 'tensors', () => page.type('[data-testid=tensors-filter]', glob));
  await waitText(page, `${m.label} tensors: the filter ${glob} narrows the count`, '[data-testid=tensors-count]',
    `${formatInt(filtered.matched)} of ${formatInt(filtered.total)} tensors`);
  check(`${m.label} tensors: ${glob} matches fewer`, filtered.matched > 0 && (filtered.matched < filtered.total || filtered.total === 1), filtered.matched);
  check(`${m.label} tensors: the filtered first row`, (await rowNames(page))[0] === filtered.rows[0].name, await rowNames(page));

  const deep = Math.min(DEEP_ROW, first.total - 1);
  const deepRow = (await api(m.url, 'tensors', { offset: deep, limit: 1 })).rows[0];
  await show(page, '#/tensors', 'tensors');
  // The rows' spacer is as tall as all rows: scroll its viewport to row `deep`.
  await page.$eval('[data-testid=tensors-table]', (spacer, row, total) => {
    spacer.parentElement.scrollTop = (spacer.offsetHeight / total) * row;
  }, deep, first.total);
  // Its page is fetched once the scrolling settles; then the row of that index shows its name.
  const row = `[data-testid=tensor-row][data-index="${deep}"]`;
  // (An object: a tensor may have no name, and waitForFunction waits for a truthy value.)
  const shown = await page.waitForFunction((sel) => {
    const found = document.querySelector(sel);
    return found ? { name: found.dataset.name } : null;
  }, { timeout: 30000 }, row).then((handle) => handle.jsonValue()).then((r) => r.name).catch(() => null);
  if (!check(`${m.label} tensors: scrolled down, row ${deep} is shown`, shown === deepRow.name, { shown, want: deepRow.name })) return;
  // Its link opens that very tensor, even where another graph uses the name (an If's branches).
  // Followed by its href: the list redraws its rows as pages arrive, so a row's element may be
  // replaced between finding and clicking it.
  const link = await page.$eval(`${row} .c-name a`, (a) => a.getAttribute('href'));
  await show(page, link, 'tensor');
  const opened = await page.$eval('[data-testid=tensor-path]', (n) => n.textContent);
  check(`${m.label} tensors: row ${deep}'s link opens its tensor`, opened === deepRow.path, { opened, want: deepRow.path });
}

/** Sorted by module (the last click of checkTensors): each shown row's module cell is its
 * module in /api/tensors ('—' where none), and the rows come in the API's module order. */
async function checkModules(page, m) {
  const want = (await api(m.url, 'tensors', { limit: 10, sort: 'module' })).rows;
  const shown = await page.$$eval('[data-testid=tensor-row]', (rows) =>
    rows.slice(0, 10).map((row) => [row.dataset.name, row.querySelector('.c-module').textContent]));
  const expected = want.map((r) => [r.name, r.module ?? '—']).slice(0, shown.length);
  check(`${m.label} tensors: sorted by module, each row names its module`, shown.length > 0 && same(shown, expected),
    { shown, expected });
}

/** The largest two-dimensional tensor of at most 64 MiB (statistics stay quick). */
async function tensorToOpen(m) {
  const { rows } = await api(m.url, 'tensors', { sort: 'bytes', order: 'desc', limit: 1000 });
  const fits = (r) => r.bytes > 0 && r.bytes <= 64 << 20;
  return rows.find((r) => r.dims.length === 2 && fits(r)) ?? rows.find(fits) ?? rows[rows.length - 1];
}

/** Opens a tensor's page: name, dims, dtype, first values, heat map. Returns /api/tensor's answer. */
async function checkTensor(page, m, name) {
  const t = await api(m.url, 'tensor', { name });
  const { values } = await api(m.url, 'values', { name, count: VALUE_COUNT });
  await show(page, `#/tensor/${encodeURIComponent(name)}`, 'tensor');
  const facts = await Promise.all(['tensor-name', 'tensor-dims', 'tensor-dtype'].map((id) =>
    page.$eval(`[data-testid=${id}]`, (n) => n.textContent)));
  check(`${m.label} tensor ${name}: name, dims, dtype`, same(facts, [name, `[${t.dims.join(', ')}]`, t.dtype]), facts);
  const shown = await texts(page, '[data-testid=tensor-values] .value-text');
  check(`${m.label} tensor ${name}: the first values are /api/values'`,
    shown.length === values.length && shown.every((text, i) => sameNumber(text, values[i])),
    { shown: shown.slice(0, 8), api: values.slice(0, 8) });

  const canvas = await page.$('[data-testid=heatmap]');
  check(`${m.label} tensor ${name}: a heat map where the API says one applies`, Boolean(canvas) === t.heatmap, t.heatmap);
  if (canvas && t.heatmap) {
    const rows = t.dims.length <= 1 ? 1 : t.dims[0];
    const cols = t.dims.length <= 1 ? t.dims[0] : t.dims.slice(1).reduce((a, b) => a * b, 1);
    const map = await api(m.url, 'heatmap', { name, width: Math.min(HEATMAP_CELLS, cols), height: Math.min(HEATMAP_CELLS, rows) });
    const drawn = await canvas.evaluate((c) => [c.width, c.height, c.getContext('2d').getImageData(0, 0, 1, 1).data[3]]);
    check(`${m.label} tensor ${name}: the heat map is drawn, ${map.height} × ${map.width} cells`,
      same(drawn, [map.width, map.height, 255]), drawn);
  }
  return t;
}

/** The statistics state once it is no longer `from`. */
async function statsStateAfter(page, from, timeout) {
  await page.waitForFunction((was) => document.querySelector('[data-stats-state]').dataset.statsState !== was, { timeout }, from);
  return page.$eval('[data-stats-state]', (n) => n.dataset.statsState);
}

async function checkStatsDone(page, m, t) {
  await page.click('[data-testid=stats-run]');
  const state = await statsStateAfter(page, 'running', 60000);
  if (!check(`${m.label} tensor ${t.name}: statistics done`, state === 'done', state)) return;
  const job = await apiStats(m.url, t.name, STATS_BINS);
  const s = job.stats;
  const table = Object.fromEntries(await tableRows(page, '[data-testid=stats-table]'));
  const want = {
    count: s.count, min: s.min, max: s.max, mean: s.mean, stddev: s.std, zeros: s.zeros, NaNs: s.nans,
    infinities: s.infinities, 'bytes read': job.bytes_read,
  };
  const wrong = Object.entries(want).filter(([key, value]) => !sameNumber(table[key] ?? '(absent)', value))
    .map(([key, value]) => `${key}: shown ${table[key]}, API ${value}`);
  check(`${m.label} tensor ${t.name}: the statistics shown are the API job's`, wrong.length === 0, wrong);
  const heights = await page.$$eval('[data-testid=histogram-bar]', (bars) => bars.map((bar) => Number(bar.getAttribute('height'))));
  check(`${m.label} tensor ${t.name}: one histogram bar per bin`, heights.length === STATS_BINS && s.histogram.length === STATS_BINS,
    heights.length);
  const tallest = Math.max(...heights);
  const most = Math.max(...s.histogram);
  check(`${m.label} tensor ${t.name}: bar heights follow the counts`,
    heights.every((h, i) => Math.abs(h / tallest - s.histogram[i] / most) < 1e-3), { heights, counts: s.histogram });
}

// The statistics of a tensor of 1 GiB and more, cancelled from the page. Counted on the
// loader's threads, the sparse 320 GB model's zero pages can be counted before the click lands
// (on a loaded machine): then the job is run again, up to 5 times, and one must be cancelled.
async function checkStatsCancel(page, m, name) {
  await checkTensor(page, m, name);
  const states = [];
  while (states.length < 5 && !states.includes('cancelled')) {
    await page.click('[data-testid=stats-run]');
    await page.waitForSelector('[data-testid=stats-cancel]:not([hidden])');
    await page.click('[data-testid=stats-cancel]');
    states.push(await statsStateAfter(page, 'running', 60000));
  }
  check(`${m.label} tensor ${name}: statistics cancelled`, states.includes('cancelled') &&
    states.every((s) => s === 'cancelled' || s === 'done'), states);
  await screenshot(page, shots, m.label, 'tensor-cancelled');
}

async function checkNode(page, m) {
  const { nodes } = await api(m.url, 'summary');
  // The first node from four fifths down the main graph on (then from its top) that reads an
  // initializer; any node where none does (PaddleOCR's weights come from Constant nodes).
  const start = Math.floor(nodes * 0.8);
  let id = start;
  let answer = await api(m.url, 'node', { id });
  for (let k = 1; answer.tensors.length === 0 && k < nodes; ++k) {
    const next = (start + k) % nodes;
    const a = await api(m.url, 'node', { id: next });
    if (a.tensors.length) [id, answer] = [next, a];
  }
  await show(page, `#/node/${id}`, 'node');
  const node = answer.node;
  const head = [await page.$eval('[data-testid=node-op]', (n) => n.textContent),
    await page.$eval('[data-testid=node-name]', (n) => n.textContent)];
  check(`${m.label} node ${id}: op and name`, same(head, [node.op_type, node.name || `(unnamed ${node.op_type})`]), head);
  const links = await texts(page, '[data-testid=node-inputs] a[data-testid=tensor-link]');
  check(`${m.label} node ${id}: tensor links`, same(links, answer.tensors), { links, api: answer.tensors });
  check(`${m.label} node ${id}: attributes`, await count(page, '[data-testid=node-attributes] tbody tr') === node.attributes.length);
  const neighbours = await count(page, 'svg[data-testid=node-neighbourhood] [data-testid=neighbour] rect');
  check(`${m.label} node ${id}: the neighbourhood is drawn`, neighbours === answer.neighbourhood.nodes.length && neighbours > 1,
    { neighbours, api: answer.neighbourhood.nodes.length });
  await checkDrawing(page, m, id, answer.drawing);
  await screenshot(page, shots, m.label, 'node');
  if (answer.tensors.length === 0) return;

  await andWait(page, 'tensor', () => page.click('[data-testid=node-inputs] a[data-testid=tensor-link]'));
  const name = await page.$eval('[data-testid=tensor-name]', (n) => n.textContent);
  check(`${m.label} node ${id}: its tensor link opens the tensor`,
    name === answer.tensors[0] && hashOf(page) === `#/tensor/${encodeURIComponent(name)}`, { name, hash: hashOf(page) });
  await andWait(page, 'node', () => page.goBack());
  check(`${m.label} node ${id}: back returns to the node`, hashOf(page) === `#/node/${id}` &&
    await page.$eval('[data-testid=node-op]', (n) => n.textContent) === node.op_type, hashOf(page));
}

/** The node page's "On the graph page" card says what /api/node's `drawing` does: the node it
 * is drawn inside and the others that show it, and what is drawn inside it, "shared" where
 * another node holds it; no card for a box of its own with nothing inside. */
async function checkDrawing(page, m, id, drawing) {
  const cards = await count(page, '[data-testid=node-drawing]');
  check(`${m.label} node ${id}: where the graph page draws it`,
    cards === (drawing.in || drawing.inside.length ? 1 : 0), { cards, drawing });
  const inLinks = await count(page, '[data-testid=drawn-in] a');
  check(`${m.label} node ${id}: drawn inside, and shown inside`,
    inLinks === (drawing.in ? 1 + drawing.also_in.length : 0), { inLinks, drawing });
  const inside = await count(page, '[data-testid=drawn-inside] li');
  const shared = await count(page, '[data-testid=drawn-inside] .tag');
  check(`${m.label} node ${id}: what is drawn inside it`, inside === drawing.inside.length &&
    shared === drawing.inside.filter((n) => n.shared).length, { inside, shared, drawing });
}

/** The first of a model's first 300 nodes that a weight preparation several nodes read is
 * shown in (torch's shape Constants, read by a Gather and three Slices), and that preparation:
 * their node pages say so. */
async function checkSharedPreparation(page, m) {
  const { nodes } = await api(m.url, 'summary');
  for (let id = 0; id < Math.min(nodes, 300); ++id) {
    const answer = await api(m.url, 'node', { id });
    const guest = answer.drawing.inside.find((n) => n.shared);
    if (!guest) continue;
    await show(page, `#/node/${id}`, 'node');
    await checkDrawing(page, m, id, answer.drawing);
    await show(page, `#/node/${guest.id}`, 'node');
    const prepared = (await api(m.url, 'node', { id: guest.id })).drawing;
    await checkDrawing(page, m, guest.id, prepared);
    check(`${m.label} node ${guest.id}: shown inside node ${id}`, prepared.also_in.some((n) => n.id === id), prepared);
    await screenshot(page, shots, m.label, 'node-shared');
    return;
  }
}

/** A tensor and a node that do not exist show the error box (the API answers 404). */
async function checkMissing(page, m, errors) {
  errors.allow = /the server responded with a status of 404/; // the browser logs the 404 itself
  for (const [hash, name] of [[`#/tensor/${encodeURIComponent('no such tensor')}`, 'tensor'], ['#/node/999999999', 'node']]) {
    await show(page, hash, name);
    const text = await page.$eval('[data-testid=error]', (n) => n.textContent).catch(() => '(no error element)');
    check(`${m.label}: ${hash} shows an error`, text.includes('(404)'), text);
    await screenshot(page, shots, m.label, `missing-${name}`);
  }
  errors.allow = null;
}

async function checkModel(browser, m) {
  const started = Date.now();
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  page.setDefaultTimeout(60000);
  const errors = watchErrors(page);
  try {
    await page.goto(m.url);
    await waitReady(page, 'summary');
    await checkSummary(page, m);
    await checkTensors(page, m);
    const t = await checkTensor(page, m, (await tensorToOpen(m)).name);
    if (t.has_stats) await checkStatsDone(page, m, t);
    await screenshot(page, shots, m.label, 'tensor');
    const embed = await api(m.url, 'tensor', { name: 'model.embed_tokens.weight' }).catch(() => null);
    if (embed?.bytes >= 2 ** 30) await checkStatsCancel(page, m, embed.name);
    await checkGraph(page, m, shots);
    await checkNode(page, m);
    await checkSharedPreparation(page, m);
    await checkMissing(page, m, errors);
  } catch (err) {
    check(`${m.label}: the checks ran to their end`, false, err.stack);
    await screenshot(page, shots, m.label, 'failure').catch(() => {});
  }
  check(`${m.label}: no console errors or page errors`, errors.length === 0, errors);
  await page.close();
  console.log(`${m.label}: checked in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--no-sandbox', '--window-size=1280,800'],
  defaultViewport: { width: 1280, height: 800 },
});
try {
  for (const m of models) await checkModel(browser, m);
} finally {
  await browser.close();
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
