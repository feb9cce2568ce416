// The viewer's first page, as a person waits for it: from the navigation's start to the summary
// drawn (the page's performance mark "ready:summary"), in Debian's chromium driven by
// puppeteer-core. The browser is started once, before any timing; each run starts a fresh
// `onnxmap view` (nothing computed ahead) and a fresh tab.
//
//   node bench/view_first_page.mjs MODULES_DIR CHROMIUM ONNXMAP RUNS MODEL...
// prints one line per model: "NAME ms ms ms ..." (one figure per run)

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const [modulesDir, chromium, onnxmap, runs, ...models] = process.argv.slice(2);
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

async function firstPageMs(browser, model) {
  const { url, child } = await startViewer(model);
  const page = await browser.newPage();
  try {
    await page.goto(`${url}#/summary`);
    await page.waitForFunction(() => performance.getEntriesByName('ready:summary').length > 0, { timeout: 60000 });
    return await page.evaluate(() => performance.getEntriesByName('ready:summary')[0].startTime);
  } finally {
    await page.close();
    child.kill('SIGINT');
  }
}

const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
try {
  for (const model of models) {
    const times = [];
    for (let i = 0; i < Number(runs); i++) times.push((await firstPageMs(browser, model)).toFixed(1));
    console.log(`${path.basename(model, '.onnx')} ${times.join(' ')}`);
  }
} finally {
  await browser.close();
}
