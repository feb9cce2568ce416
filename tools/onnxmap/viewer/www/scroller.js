// A virtual scroller over a server-paged list: a spacer as tall as all the matched rows, pages
// of `pageSize` rows fetched when they come into view (and cached, least recently used first
// out), and only the visible rows (plus a margin) in the DOM. Used by the tensor table and the
// node list.
//
// Heights: rows are `rowHeight` pixels; browsers cap an element's height (about 33 M px in
// Chromium, 17 M in Firefox), so at 24 px a list shows its first ~700,000 rows at most.

import { el } from './dom.js';

const MAX_CACHED_PAGES = 60;
const OVERSCAN_ROWS = 10;
const FETCH_DELAY_MS = 60; // at most one round of fetches per this many ms while scrolling
const MAX_PENDING = 4; // pages in flight at once

/**
 * Creates a virtual list inside `viewport` (an element with a fixed height and overflow: auto).
 *   fetchPage(offset, limit, signal) -> Promise<{matched, total, rows}>
 *   renderRow(row, index) -> Element     (given a fetched row)
 *   renderPlaceholder(index) -> Element  (for a row whose page is still loading)
 *   onCount({matched, total})            (after each answer)
 *   onError(err)                         (a page failed)
 * Returns {reset(): Promise (resolves once the first page is drawn), destroy()}.
 */
export function createVirtualList({ viewport, rowHeight, pageSize, fetchPage, renderRow, renderPlaceholder, onCount, onError, rowsAttrs }) {
  const spacer = el('div', { class: 'vlist-spacer', ...rowsAttrs });
  viewport.replaceChildren(spacer);
  let pages = new Map(); // page index -> rows (insertion order = recency)
  let pending = new Set(); // page indexes being fetched
  let matched = 0;
  let generation = 0;
  let controller = new AbortController();
  let frame = 0;
  let fetchTimer = 0;
  let drawnKey = '';

  function visibleRange() {
    const first = Math.max(0, Math.floor(viewport.scrollTop / rowHeight) - OVERSCAN_ROWS);
    const last = Math.min(matched, Math.ceil((viewport.scrollTop + viewport.clientHeight) / rowHeight) + OVERSCAN_ROWS);
    return { first, last };
  }

  function touch(pageIndex) {
    const rows = pages.get(pageIndex);
    pages.delete(pageIndex);
    pages.set(pageIndex, rows);
    return rows;
  }

  function remember(pageIndex, rows) {
    pages.set(pageIndex, rows);
    while (pages.size > MAX_CACHED_PAGES) pages.delete(pages.keys().next().value);
  }

  function rowElement(index) {
    const pageIndex = Math.floor(index / pageSize);
    const rows = pages.has(pageIndex) ? touch(pageIndex) : null;
    const row = rows ? rows[index - pageIndex * pageSize] : undefined;
    const element = row ? renderRow(row, index) : renderPlaceholder(index);
    element.style.top = `${index * rowHeight}px`;
    element.style.height = `${rowHeight}px`;
    return element;
  }

  function draw() {
    frame = 0;
    const { first, last } = visibleRange();
    const loaded = [];
    for (let p = Math.floor(first / pageSize); p * pageSize < last; p += 1) loaded.push(pages.has(p) ? 1 : 0);
    const key = `${generation}:${first}:${last}:${loaded.join('')}`;
    if (key !== drawnKey) {
      drawnKey = key;
      const elements = [];
      for (let i = first; i < last; i += 1) elements.push(rowElement(i));
      spacer.replaceChildren(...elements);
    }
    if (loaded.includes(0)) scheduleFetch();
  }

  function scheduleDraw() {
    if (!frame) frame = requestAnimationFrame(draw);
  }

  /** Throttled: fetches what is visible FETCH_DELAY_MS after the first call, not what was passed. */
  function scheduleFetch() {
    if (fetchTimer) return;
    fetchTimer = setTimeout(() => {
      fetchTimer = 0;
      fetchVisible();
    }, FETCH_DELAY_MS);
  }

  function fetchVisible() {
    const { first, last } = visibleRange();
    for (let p = Math.floor(first / pageSize); p * pageSize < last; p += 1) {
      if (pending.size >= MAX_PENDING) {
        scheduleFetch();
        return;
      }
      if (!pages.has(p) && !pending.has(p)) loadPage(p).catch(reportError);
    }
  }

  function reportError(err) {
    if (err.name !== 'AbortError' && onError) onError(err);
  }

  /** Fetches one page; ignores the answer if the list was reset meanwhile. */
  async function loadPage(pageIndex) {
    const mine = generation;
    pending.add(pageIndex);
    try {
      const answer = await fetchPage(pageIndex * pageSize, pageSize, controller.signal);
      if (mine !== generation) return;
      matched = answer.matched;
      spacer.style.height = `${matched * rowHeight}px`;
      remember(pageIndex, answer.rows);
      if (onCount) onCount(answer);
      scheduleDraw();
    } finally {
      if (mine === generation) pending.delete(pageIndex);
    }
  }

  viewport.addEventListener('scroll', scheduleDraw, { passive: true });
  const resizeObserver = new ResizeObserver(scheduleDraw);
  resizeObserver.observe(viewport);

  return {
    /** Forgets every page (the query changed), scrolls to the top, and loads the first page. */
    async reset() {
      generation += 1;
      controller.abort();
      controller = new AbortController();
      pages = new Map();
      pending = new Set();
      matched = 0;
      drawnKey = '';
      viewport.scrollTop = 0;
      spacer.style.height = '0px';
      spacer.replaceChildren();
      const mine = generation;
      await loadPage(0);
      if (mine === generation) draw();
    },
    destroy() {
      generation += 1;
      controller.abort();
      clearTimeout(fetchTimer);
      fetchTimer = 0;
      cancelAnimationFrame(frame);
      resizeObserver.disconnect();
      viewport.removeEventListener('scroll', scheduleDraw);
    },
  };
}
