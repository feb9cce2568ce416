// Helpers of tests/view/browser_test.mjs: the check tally, the API as the test reads it, and
// waiting for the viewer's pages (their test hooks are described in tools/onnxmap/viewer/www/app.js).

import path from 'node:path';

export const results = { passed: 0, failed: 0 };

/** Counts one check; prints it when it fails. */
export function check(name, condition, detail = '') {
  if (condition) {
    results.passed += 1;
    return true;
  }
  results.failed += 1;
  const text = typeof detail === 'string' ? detail : JSON.stringify(detail);
  console.log(`FAIL ${name}: ${String(text).slice(0, 600)}`);
  return false;
}

/** GET (or another method) of /api/PATH?query on the viewer at `base`, parsed. */
export async function api(base, apiPath, query = {}, method = 'GET') {
  const url = new URL(`api/${apiPath}`, base);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, String(value));
  const response = await fetch(url, { method });
  const body = await response.json();
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/** Runs a statistics job through the API to its end; returns its last answer. */
export async function apiStats(base, name, bins) {
  const { job } = await api(base, 'stats', { name, bins }, 'POST');
  for (;;) {
    const answer = await api(base, 'stats', { job });
    if (answer.state !== 'running') return answer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** "259,392", as the page writes integers. */
export function formatInt(n) {
  return n.toLocaleString('en-US');
}

/** Whether a number as the page shows it ("1,234", "0.123457", "1.5e-7", "nan", "—") is `value`
 *  (an API number, "nan"/"inf"/"-inf", or null), to the 6 significant digits the page shows. */
export function sameNumber(text, value) {
  if (value === null || value === undefined) return text === '—';
  if (typeof value === 'string') return text === value;
  const shown = Number(text.replaceAll(',', ''));
  if (!Number.isFinite(shown)) return false;
  return Math.abs(shown - value) <= 1e-5 * Math.max(Math.abs(value), 1e-30);
}

// ---------------------------------------------------------------------------------------------
// Pages

/** Resolves once page `name` has drawn its data: body data-state "ready" and its performance
 *  mark (marks are cleared before each navigation, so an earlier page's mark does not count). */
export async function waitReady(page, name, timeout = 60000) {
  await page.waitForFunction((want) => document.body.dataset.state === 'ready' &&
    document.getElementById('page')?.dataset.page === want &&
    performance.getEntriesByName(`ready:${want}`).length > 0, { timeout }, name);
}

/** Runs `action` (a click, typing, a history step) and waits for page `name` to be ready again. */
export async function andWait(page, name, action) {
  await page.evaluate(() => performance.clearMarks());
  await action();
  await waitReady(page, name);
}

/** Shows the route `hash` ("#/tensors?sort=bytes") afresh and waits for page `name`. */
export async function show(page, hash, name) {
  await andWait(page, name, () => page.evaluate((h) => {
    if (location.hash === h) window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = h;
  }, hash));
}

/** The hash of the page's URL, raw ("#/graph?prefix=model."). */
export function hashOf(page) {
  const url = page.url();
  const at = url.indexOf('#');
  return at < 0 ? '' : url.slice(at);
}

/** textContent of every element matching `selector`, trimmed, in document order. */
export function texts(page, selector) {
  return page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent.trim()));
}

/** The rows of the table(s) under `selector` as arrays of cell texts (th and td). */
export function tableRows(page, selector) {
  return page.$$eval(`${selector} tbody tr`, (rows) => rows.map((row) =>
    [...row.children].map((cell) => cell.textContent.trim())));
}

/** Waits until the text of `selector` is `want`; returns whether it became so (and checks it). */
export async function waitText(page, name, selector, want, timeout = 60000) {
  try {
    await page.waitForFunction((s, w) => document.querySelector(s)?.textContent.trim() === w,
      { timeout }, selector, want);
    return check(name, true);
  } catch {
    const got = await page.$eval(selector, (n) => n.textContent.trim()).catch(() => '(absent)');
    return check(name, false, { want, got });
  }
}

/** Collects the page's console errors and uncaught exceptions into `errors` (with the route).
 *  While `errors.allow` (a RegExp) is set, console errors matching it are expected. */
export function watchErrors(page) {
  const errors = [];
  errors.allow = null;
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const url = message.location()?.url ?? '';
    if (errors.allow?.test(message.text())) return;
    errors.push(`${hashOf(page)}: console: ${message.text()} ${url}`);
  });
  page.on('pageerror', (error) => errors.push(`${hashOf(page)}: page error: ${error.message}`));
  return errors;
}

/** Saves a PNG of the whole page as FOLDER/MODEL-NAME.png. */
export async function screenshot(page, folder, model, name) {
  await page.screenshot({ path: path.join(folder, `${model}-${name}.png`), fullPage: true });
}
