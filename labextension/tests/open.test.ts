import { describe, expect, it } from 'vitest';
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { Widget } from '@lumino/widgets';
import { openInShell } from '../src/lab/open';

/** A shell with the given areas; "main" ignores a second widget, as Notebook 7's does. */
function shell(areas: string[], mainTaken = false) {
  const added: string[] = [];
  const activated: string[] = [];
  const widget = { id: 'w', isAttached: false } as unknown as Widget & { isAttached: boolean };
  const value = {
    add: (w: Widget & { isAttached: boolean }, area: string) => {
      if (!areas.includes(area)) {
        throw new Error(`no area ${area}`);
      }
      added.push(area);
      if (!(area === 'main' && mainTaken)) {
        w.isAttached = true;
      }
    },
    activateById: (id: string) => activated.push(id)
  } as unknown as JupyterFrontEnd.IShell;
  return { shell: value, widget, added, activated };
}

describe('Open panel', () => {
  it('splits the main area in JupyterLab', () => {
    const s = shell(['main', 'left', 'right', 'down']);
    expect(openInShell(s.shell, s.widget, true)).toBe('main');
    expect(s.activated).toEqual(['w']);
  });

  it("uses Notebook 7's down area, whose main area holds the notebook alone", () => {
    const s = shell(['main', 'left', 'right', 'down'], true);
    expect(openInShell(s.shell, s.widget, false)).toBe('down');
    expect(s.added).toEqual(['down']);
  });

  it('falls back to the right panel, or says there is no area (never silent)', () => {
    const right = shell(['main', 'right'], true);
    expect(openInShell(right.shell, right.widget, false)).toBe('right');
    const none = shell([], true);
    expect(openInShell(none.shell, none.widget, false)).toBeNull();
    expect(none.activated).toEqual([]);
  });
});
