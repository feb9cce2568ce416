// Where the graph page's drawing opens, and what it says about the part out of view. A drawing
// opens on the graph's inputs (the boxes of kind "input"; without any, the top row of boxes),
// centred on them across, from the top; and while part of it is out of view, a bar under it
// says how many boxes lie below, above, left and right, each a button that scrolls there.

import { el } from './dom.js';
import { formatInt } from './format.js';

const MARGIN = 16; // graphdraw.js's margin around the drawing

/** The boxes of `scene` a first screen should show: its inputs, else its top row. */
function startBoxes(scene) {
  const inputs = scene.boxes.filter((b) => b.kind === 'input');
  if (inputs.length) return inputs;
  const top = Math.min(...scene.boxes.map((b) => b.y));
  return scene.boxes.filter((b) => b.y <= top + 1);
}

/** Scrolls `viewport` (holding the drawing of `scene`) to its start: see the file's comment. */
export function scrollToStart(viewport, scene) {
  if (!scene.boxes.length) return;
  const svg = viewport.querySelector('svg');
  const offset = svg ? svg.getBoundingClientRect().left - viewport.getBoundingClientRect().left + viewport.scrollLeft : 0;
  const start = startBoxes(scene);
  const left = Math.min(...start.map((b) => b.x)) + MARGIN + offset;
  const right = Math.max(...start.map((b) => b.x + b.width)) + MARGIN + offset;
  const width = viewport.clientWidth;
  // Centred on the inputs; where they are wider than the view, their left end first.
  viewport.scrollLeft = right - left <= width ? (left + right) / 2 - width / 2 : left - MARGIN;
  viewport.scrollTop = 0;
}

/** Counts the boxes of `scene` wholly out of `viewport`'s view, by side. */
function outOfView(viewport, scene) {
  const svg = viewport.querySelector('svg');
  if (!svg) return null;
  const origin = svg.getBoundingClientRect();
  const view = viewport.getBoundingClientRect();
  const counts = { above: 0, below: 0, left: 0, right: 0 };
  const first = { above: null, below: null, left: null, right: null };
  for (const b of scene.boxes) {
    const top = origin.top + b.y + MARGIN;
    const left = origin.left + b.x + MARGIN;
    let side = null;
    if (top + b.height <= view.top) side = 'above';
    else if (top >= view.bottom) side = 'below';
    else if (left + b.width <= view.left) side = 'left';
    else if (left >= view.right) side = 'right';
    if (!side) continue;
    counts[side] += 1;
    // The nearest box on each side: where its button scrolls to.
    const distance = side === 'above' ? view.top - top : side === 'below' ? top - view.bottom
      : side === 'left' ? view.left - left : left - view.right;
    if (!first[side] || distance < first[side].distance) first[side] = { box: b, distance };
  }
  return { counts, first };
}

const ARROWS = { above: '↑', below: '↓', left: '←', right: '→' };

/**
 * Keeps `bar` saying where the rest of the drawing of `scene` in `viewport` is; returns a
 * function that stops it. Each count is a button that brings the nearest such box into view.
 */
export function showRest(viewport, bar, scene) {
  let frame = 0;
  const update = () => {
    frame = 0;
    const rest = outOfView(viewport, scene);
    if (!rest) return;
    const parts = [];
    for (const side of ['below', 'right', 'left', 'above']) {
      const n = rest.counts[side];
      if (!n) continue;
      const button = el('button', { type: 'button', class: 'rest-link', 'data-testid': `rest-${side}` },
        `${ARROWS[side]} ${formatInt(n)} box${n === 1 ? '' : 'es'} ${side === 'left' || side === 'right' ? `to the ${side}` : side}`);
      button.addEventListener('click', () => {
        const node = viewport.querySelector(`[data-id="${CSS.escape(rest.first[side].box.id)}"]`);
        node?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
      });
      parts.push(button);
    }
    bar.replaceChildren(...(parts.length ? [el('span', { class: 'muted small' }, 'Out of view: '), ...parts] : []));
    bar.hidden = !parts.length;
  };
  const schedule = () => { if (!frame) frame = requestAnimationFrame(update); };
  viewport.addEventListener('scroll', schedule, { passive: true });
  const observer = new ResizeObserver(schedule);
  observer.observe(viewport);
  update();
  return () => {
    cancelAnimationFrame(frame);
    observer.disconnect();
    viewport.removeEventListener('scroll', schedule);
  };
}
