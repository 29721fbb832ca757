/**
 * DOM helpers. Every string reaches the page through textContent: task keys, device and
 * worker names are user data, so no HTML parsing ever happens here (eslint forbids innerHTML).
 */

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

/** A horizontal bar: a track, a fill of `fraction` (null: empty) and a caption. */
export function bar(className: string): HTMLDivElement {
  const track = el('div', `gpudask-bar ${className}`);
  track.append(el('div', 'gpudask-bar-fill'), el('span', 'gpudask-bar-text'));
  return track;
}

export function setBar(track: HTMLElement, fraction: number | null, caption: string): void {
  const fill = track.firstElementChild as HTMLElement;
  fill.style.width = `${fraction === null ? 0 : Math.round(fraction * 1000) / 10}%`;
  setText(track.lastElementChild as HTMLElement, caption);
}

/** Only "#rgb"/"#rrggbb" reach styles and canvases: anything else is drawn grey. */
export function safeColor(color: string | null | undefined): string {
  return typeof color === 'string' && /^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/i.test(color)
    ? color
    : '#888888';
}
