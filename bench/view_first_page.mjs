// The viewer's first page, as a person waits for it: from the navigation's start to PAGE drawn
// (the page's performance mark "ready:PAGE": "summary", or "graph", the graph page's first
// drawing), in Debian's chromium driven by puppeteer-core. The browser is started once, before
// any timing; each run starts a fresh `onnxmap view` (nothing computed ahead) and a fresh tab.
// On the graph page, a click then unfolds its first folded box ("× N" first), timed from the
// click to the drawing with it unfolded.
//
//   node bench/view_first_page.mjs MODULES_DIR CHROMIUM ONNXMAP RUNS PAGE MODEL...
// prints one line per model: "NAME ms ms ms ..." (one figure per run), and for the graph page
// one more: "NAME:unfold ms ms ms ...".

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const [modulesDir, chromium, onnxmap, runs, pageName, ...models] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modulesDir), 'package.json'));
const puppeteer = require('puppeteer-core');

// Starts a viewer; resolves with its URL and the process.
function startViewer(model) {
  const child = spawn(onnxmap, ['view', model, '--no-browser', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', (line) => {
      const url = line.match(/ at (http:\/\/\S+)/);
      if (url) resolve({ url: url[1], child });
      else reject(new Error(`onnxmap view said: ${line}`));
    });
    child.once('exit', (code) => reject(new Error(`onnxmap view exited ${code}`)));
  });
}

// Milliseconds from a click on the first folded box to the drawing with it unfolded.
async function unfoldMs(page) {
  const box = await page.$('[data-testid=graph-box][data-kind=repeat]') ??
    await page.$('[data-testid=graph-box][data-kind=group], [data-testid=graph-box][data-kind=range]');
  if (!box) return NaN;
  await page.evaluate(() => performance.clearMarks());
  const clicked = await page.evaluate(() => performance.now());
  await box.click();
  await page.waitForFunction(() => performance.getEntriesByName('ready:graph').length > 0, { timeout: 60000 });
  return (await page.evaluate(() => performance.getEntriesByName('ready:graph')[0].startTime)) - clicked;
}

async function firstPageMs(browser, model) {
  const { url, child } = await startViewer(model);
  const page = await browser.newPage();
  try {
    await page.goto(`${url}#/${pageName}`);
    await page.waitForFunction((name) => performance.getEntriesByName(`ready:${name}`).length > 0, { timeout: 60000 }, pageName);
    const first = await page.evaluate((name) => performance.getEntriesByName(`ready:${name}`)[0].startTime, pageName);
    return { first, unfold: pageName === 'graph' ? await unfoldMs(page) : null };
  } finally {
    await page.close();
    child.kill('SIGINT');
  }
}

const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
try {
  for (const model of models) {
    const runsOf = [];
    for (let i = 0; i < Number(runs); i++) runsOf.push(await firstPageMs(browser, model));
    const name = path.basename(model, '.onnx');
    console.log(`${name} ${runsOf.map((r) => r.first.toFixed(1)).join(' ')}`);
    if (pageName === 'graph') console.log(`${name}:unfold ${runsOf.map((r) => r.unfold.toFixed(1)).join(' ')}`);
  }
} finally {
  await browser.close();
}
