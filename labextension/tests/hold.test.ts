// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { holdHeights, markHeld } from '../src/view/dom';

/** jsdom lays nothing out: each node reports the size the test gives it. */
function sized(node: HTMLElement, size: { width: number; height: number }): void {
  Object.defineProperty(node, 'clientWidth', { get: () => size.width });
  Object.defineProperty(node, 'offsetHeight', {
    get: () => Math.max(size.height, parseFloat(node.style.minHeight) || 0)
  });
}

describe('held heights', () => {
  it('grow to the tallest text, never shrink, and fit again at a new width', () => {
    const root = document.createElement('div');
    const line = document.createElement('div');
    const other = document.createElement('div');
    root.append(line, other);
    markHeld(line);
    const size = { width: 250, height: 16 };
    sized(line, size);
    sized(other, { width: 250, height: 40 });

    holdHeights(root); // first paint: measured, nothing held yet
    expect(line.style.minHeight).toBe('');
    holdHeights(root);
    expect(line.style.minHeight).toBe('16px');
    size.height = 32; // the text wrapped onto a second line
    holdHeights(root);
    expect(line.style.minHeight).toBe('32px');
    size.height = 16; // and back: the space stays
    holdHeights(root);
    expect(line.style.minHeight).toBe('32px');
    expect(line.offsetHeight).toBe(32);

    size.width = 400; // wider: one line fits again
    holdHeights(root);
    expect(line.style.minHeight).toBe('');
    holdHeights(root);
    expect(line.style.minHeight).toBe('16px');
    expect(other.style.minHeight).toBe(''); // unmarked nodes are left alone
  });
});
