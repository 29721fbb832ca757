/**
 * Where "Open panel" puts the view. JupyterLab: the main area, split right of the notebook.
 * Notebook 7's main area holds the notebook alone (adding there does nothing), so there it goes
 * to the "down" area, else the right side panel. Returns the area used, or null when the
 * application has none (the caller says so: never a silent no-op).
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { Widget } from '@lumino/widgets';

export type Area = 'main' | 'down' | 'right';

export function openInShell(
  shell: JupyterFrontEnd.IShell,
  widget: Widget,
  isLab: boolean
): Area | null {
  const attempts: [Area, { mode?: string } | undefined][] = isLab
    ? [['main', { mode: 'split-right' }]]
    : [
        ['down', undefined],
        ['right', undefined]
      ];
  for (const [area, options] of attempts) {
    if (!widget.isAttached) {
      try {
        shell.add(widget, area, options as never);
      } catch {
        continue; // this shell has no such area
      }
    }
    if (widget.isAttached) {
      shell.activateById(widget.id);
      if (area === 'down') {
        giveRoom(widget);
      }
      return area;
    }
  }
  return null;
}

interface SplitLike {
  widgets: readonly Widget[];
  relativeSizes(): number[];
  setRelativeSizes(sizes: number[]): void;
}

function isSplit(value: unknown): value is SplitLike {
  const v = value as Partial<SplitLike> | null;
  return !!v && typeof v.setRelativeSizes === 'function' && typeof v.relativeSizes === 'function';
}

/**
 * Notebook 7 opens its down area collapsed to the tab: give the area holding `widget` at least
 * `share` of the split it is in (a Lumino SplitPanel; left alone when there is none).
 */
export function giveRoom(widget: Widget, share = 0.45): void {
  let child: Widget = widget;
  let parent = widget.parent;
  while (parent && !isSplit(parent)) {
    child = parent;
    parent = parent.parent;
  }
  if (!parent || !isSplit(parent)) {
    return;
  }
  const index = parent.widgets.indexOf(child);
  const sizes = parent.relativeSizes();
  if (index < 0 || sizes.length < 2 || sizes[index] >= share) {
    return;
  }
  const rest = sizes.reduce((sum, size, i) => (i === index ? sum : sum + size), 0) || 1;
  parent.setRelativeSizes(
    sizes.map((size, i) => (i === index ? share : (size / rest) * (1 - share)))
  );
}
