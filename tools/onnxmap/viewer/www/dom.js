// DOM helpers shared by the pages: el() and svgEl() to build elements, and the small pieces
// built with them (cards, size spans, the error box), plus debounce() for input events.
// Model strings only ever reach the page as text nodes or attribute values.

import { formatBytes, formatInt } from './format.js';

function applyAttrs(element, attrs) {
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') element.setAttribute('class', value);
    else if (key.startsWith('on') && typeof value === 'function') element.addEventListener(key.slice(2), value);
    else if (key === 'value' && 'value' in element) element.value = value;
    else element.setAttribute(key, value === true ? '' : String(value));
  }
}

/** Appends children (nodes, strings, nested arrays) to `element`, skipping null/undefined/false. */
export function appendChildren(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Creates an HTML element: el('a', {href: '#/x', class: 'k'}, 'text', childNode, [more]). */
export function el(tag, attrs, ...children) {
  const element = document.createElement(tag);
  applyAttrs(element, attrs);
  appendChildren(element, children);
  return element;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Creates an SVG element, same conventions as el(). */
export function svgEl(tag, attrs, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  applyAttrs(element, attrs);
  appendChildren(element, children);
  return element;
}

/** A size as text with the exact byte count in the tooltip. */
export function bytesSpan(bytes) {
  return el('span', { class: 'num', title: `${formatInt(bytes)} bytes` }, formatBytes(bytes));
}

/** A card: <section class="card"><h2>title</h2>...children</section>. */
export function card(title, attrs, ...children) {
  return el('section', { class: 'card', ...attrs }, title ? el('h2', null, title) : null, ...children);
}

/** A readable error box (data-testid="error"); never an alert. */
export function errorBox(err) {
  const message = err instanceof Error ? err.message : String(err);
  const status = err && err.status ? ` (${err.status})` : '';
  return el('div', { class: 'error', 'data-testid': 'error', role: 'alert' }, `Error${status}: ${message}`);
}

/** Calls fn(...args) once no call came for `ms` milliseconds. */
export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
