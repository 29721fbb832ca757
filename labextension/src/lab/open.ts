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
      return area;
    }
  }
  return null;
}
