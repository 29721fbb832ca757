import { describe, expect, it } from 'vitest';
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { Widget } from '@lumino/widgets';
import { giveRoom, openInShell } from '../src/lab/open';

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

describe('room for the down area', () => {
  it('gives the split child holding the panel a share of the split', () => {
    let sizes = [1, 0];
    const split = {
      widgets: [] as unknown[],
      relativeSizes: () => sizes,
      setRelativeSizes: (next: number[]) => (sizes = next),
      parent: null
    };
    const area = { parent: split };
    split.widgets.push({}, area);
    const widget = { parent: { parent: area } } as unknown as Widget;
    giveRoom(widget);
    expect(sizes[1]).toBeCloseTo(0.45);
    expect(sizes[0]).toBeCloseTo(0.55);
    giveRoom(widget); // enough room already: left alone
    expect(sizes[1]).toBeCloseTo(0.45);
    giveRoom({ parent: null } as unknown as Widget); // no split: nothing to do
  });
});
