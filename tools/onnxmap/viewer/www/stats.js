// The statistics section of a tensor page. "Compute statistics" POSTs /api/stats, then polls
// GET /api/stats?job= every 100 ms, showing a <progress> and a Cancel button (DELETE); when the
// job is done it shows the numbers and the histogram. The section's data-stats-state is
// "idle", "running", "done", "cancelled" or "failed". Leaving the page cancels a running job.

import { el, card, errorBox } from './dom.js';
import { formatInt, formatValue, formatBytes } from './format.js';
import { api } from './api.js';
import { drawHistogram } from './draw.js';

const BINS = 64;
const POLL_MS = 100;

/** Resolves after `ms`, or rejects with an AbortError when `signal` aborts first. */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new DOMException('aborted', 'AbortError'));
    }, { once: true });
  });
}

/** The statistics card of tensor `t`; `ctx.signal` ends polling (and cancels the job). */
export function statsSection(t, ctx) {
  const ui = {
    run: el('button', { type: 'button', class: 'primary', 'data-testid': 'stats-run' }, 'Compute statistics'),
    cancel: el('button', { type: 'button', 'data-testid': 'stats-cancel', hidden: true }, 'Cancel'),
    progress: el('progress', { 'data-testid': 'stats-progress', max: 1, value: 0, hidden: true }),
    progressText: el('span', { class: 'muted small mono' }),
    message: el('div', { class: 'stats-message' }),
    results: el('div', { class: 'stats-results' }),
  };
  ui.section = card('Statistics', { 'data-stats-state': 'idle', class: 'card stats' },
    el('div', { class: 'toolbar' }, ui.run, ui.progress, ui.progressText, ui.cancel),
    el('p', { class: 'muted small' }, `reads all ${formatBytes(t.bytes)} of the tensor, counts values into ${BINS} bins`),
    ui.message, ui.results);
  const job = { id: null, cancelRequested: false, running: false };
  ui.run.addEventListener('click', () => runJob(t, ui, job, ctx.signal));
  ui.cancel.addEventListener('click', () => cancelJob(job));
  ctx.signal.addEventListener('abort', () => { if (job.running) cancelJob(job); });
  return ui.section;
}

function setState(ui, state) {
  ui.section.dataset.statsState = state;
  const running = state === 'running';
  ui.run.disabled = running;
  ui.cancel.hidden = !running;
  ui.cancel.disabled = false;
  ui.progress.hidden = !running;
  if (!running) ui.progressText.textContent = '';
}

/** Starts a job and follows it to its end. */
async function runJob(t, ui, job, signal) {
  Object.assign(job, { id: null, cancelRequested: false, running: true });
  ui.message.replaceChildren();
  ui.results.replaceChildren();
  ui.progress.value = 0;
  setState(ui, 'running');
  try {
    const started = await api('stats', { name: t.name, index: t.index, bins: BINS }, { method: 'POST', signal });
    job.id = started.job;
    if (job.cancelRequested) cancelJob(job);
    const end = await poll(ui, job, signal);
    job.running = false;
    showEnd(ui, end);
  } catch (err) {
    job.running = false;
    if (err.name === 'AbortError') return;
    if (job.cancelRequested && err.status === 404) { // the server dropped the cancelled job
      showEnd(ui, { state: 'cancelled' });
      return;
    }
    setState(ui, 'failed');
    const text = err.status === 429 ? 'two statistics jobs are running already; try again when one ends' : err.message;
    ui.message.replaceChildren(errorBox(Object.assign(new Error(text), { status: err.status })));
  }
}

/** Polls the job until it is no longer running; returns its last answer. */
async function poll(ui, job, signal) {
  for (;;) {
    const answer = await api('stats', { job: job.id }, { signal });
    if (answer.state !== 'running') return answer;
    ui.progress.value = Math.min(1, Math.max(0, answer.progress ?? 0));
    ui.progressText.textContent = `${formatBytes(answer.bytes_read)} of ${formatBytes(answer.bytes)} read`;
    await sleep(POLL_MS, signal);
  }
}

/** Asks the server to cancel; the poll then sees "cancelled". Safe to call at any time. */
function cancelJob(job) {
  job.cancelRequested = true;
  if (job.id === null) return;
  api('stats', { job: job.id }, { method: 'DELETE' }).catch(() => { /* it ended meanwhile */ });
}

function showEnd(ui, answer) {
  if (answer.state === 'done') {
    setState(ui, 'done');
    ui.results.replaceChildren(...resultsOf(answer.stats ?? {}, answer));
  } else if (answer.state === 'cancelled') {
    setState(ui, 'cancelled');
    const read = answer.bytes === undefined ? '' : ` after ${formatBytes(answer.bytes_read)} of ${formatBytes(answer.bytes)}`;
    ui.message.replaceChildren(el('p', { class: 'muted' }, `cancelled${read}`));
  } else {
    setState(ui, 'failed');
    ui.message.replaceChildren(errorBox(answer.error ?? `the job ended in state "${answer.state}"`));
  }
}

function resultsOf(stats, answer) {
  const rows = [
    ['count', formatInt(stats.count)], ['min', formatValue(stats.min)], ['max', formatValue(stats.max)],
    ['mean', formatValue(stats.mean)], ['stddev', formatValue(stats.std)], ['zeros', formatInt(stats.zeros)],
    ['NaNs', formatInt(stats.nans)], ['infinities', formatInt(stats.infinities)],
    ['bytes read', formatInt(answer.bytes_read)],
  ];
  const table = el('table', { class: 'kv stats-table', 'data-testid': 'stats-table' }, el('tbody', null,
    rows.map(([k, v]) => el('tr', null, el('th', null, k), el('td', { class: 'num' }, v)))));
  const counts = stats.histogram ?? [];
  if (counts.length === 0) return [table, el('p', { class: 'muted' }, 'no finite value: no histogram')];
  const plot = el('div', { class: 'histogram-box' });
  const logBox = el('input', { type: 'checkbox', 'data-testid': 'histogram-log' });
  const drawPlot = () => plot.replaceChildren(drawHistogram(counts, stats.bins ?? [], { log: logBox.checked }));
  logBox.addEventListener('change', drawPlot);
  drawPlot();
  return [el('div', { class: 'stats-grid' }, table, el('div', null,
    el('label', { class: 'small' }, logBox, ' log scale for counts'), plot))];
}
