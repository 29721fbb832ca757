/**
 * DOM helpers. Every string reaches the page through textContent: task keys, device and
 * worker names are user data, so no HTML parsing ever happens here (eslint forbids innerHTML).
 */
import { readablePrefix } from './names';

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** Set text only when it changed: spares layout work on every frame. */
export function setText(node: Node, text: string): void {
  if (node.textContent !== text) {
    node.textContent = text;
  }
}

/** Give `parent` exactly `nodes` as its children, in order, touching the DOM only when
 * they differ: rows kept across frames keep their focus, hover and scroll. */
export function setChildren(parent: HTMLElement, nodes: HTMLElement[]): void {
  const same =
    nodes.length === parent.children.length &&
    nodes.every((node, i) => parent.children[i] === node);
  if (!same) {
    parent.replaceChildren(...nodes);
  }
}

/**
 * Text that changes with every sample or pointer move (a readout, a sensor line, a bar's
 * caption) rewraps now and then; each time, everything below it moves up and down, under the
 * user's pointer too. A node marked here keeps the tallest height it had (see `holdHeights`).
 */
export function markHeld(node: HTMLElement): void {
  node.dataset.hold = '';
}

/**
 * After a paint: every marked node under `root` grows to its tallest height so far and never
 * shrinks, until its width changes (then it fits its text again). All sizes are read first and
 * written after, so a view with many bars lays out once, not once per bar.
 */
export function holdHeights(root: HTMLElement): void {
  const nodes = [...root.querySelectorAll<HTMLElement>('[data-hold]')];
  const sizes = nodes.map(node => [node.clientWidth, node.offsetHeight]);
  nodes.forEach((node, i) => {
    const [width, height] = sizes[i];
    const data = node.dataset;
    if (data.heldWidth !== String(width)) {
      data.heldWidth = String(width);
      delete data.heldHeight;
      node.style.minHeight = ''; // measured afresh at the next paint
    } else if (height > Number(data.heldHeight ?? 0)) {
      data.heldHeight = String(height);
      node.style.minHeight = `${height}px`;
    }
  });
}

/**
 * A bar with its caption: the text on its own line above a thin track (text over a coloured
 * fill cannot keep its contrast in every theme), the track filled by one or more segments.
 */
export function bar(className: string, segments = 1): HTMLDivElement {
  const node = el('div', `gpudask-bar ${className}`);
  const track = el('div', 'gpudask-bar-track');
  for (let i = 0; i < segments; i++) {
    track.append(el('div', `gpudask-bar-fill gpudask-bar-fill-${i}`));
  }
  const caption = el('span', 'gpudask-bar-text');
  markHeld(caption);
  node.append(caption, track);
  return node;
}

function percent(fraction: number | null): string {
  return `${fraction === null ? 0 : Math.round(Math.min(1, Math.max(0, fraction)) * 1000) / 10}%`;
}

/** Fill the bar's segments with `fractions` of the track (null: empty) and set its caption. */
export function setBar(
  node: HTMLElement,
  fraction: number | null | (number | null)[],
  caption: string
): void {
  const fractions = Array.isArray(fraction) ? fraction : [fraction];
  const fills = node.querySelectorAll<HTMLElement>('.gpudask-bar-fill');
  fills.forEach((fill, i) => {
    const width = percent(fractions[i] ?? null);
    if (fill.style.width !== width) {
      fill.style.width = width;
    }
  });
  setText(node.firstElementChild as HTMLElement, caption);
}

/** Only "#rgb"/"#rrggbb" reach styles and canvases: anything else is drawn grey. */
export function safeColor(color: string | null | undefined): string {
  return typeof color === 'string' && /^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/i.test(color)
    ? color
    : '#888888';
}

/** A task prefix as the views name it: a swatch of its colour, then its readable name; the
 * prefix itself in the tooltip. */
export function prefixName(prefix: string, color: string | null | undefined): HTMLElement {
  const name = el('span', 'gpudask-prefix');
  const swatch = el('span', 'gpudask-swatch');
  swatch.style.backgroundColor = safeColor(color);
  swatch.setAttribute('aria-hidden', 'true');
  name.append(swatch, document.createTextNode(readablePrefix(prefix)));
  name.title = prefix;
  return name;
}
