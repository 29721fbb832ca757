import { describe, expect, it } from 'vitest';
import {
  ACTION_COLORS,
  DASK_PALETTE,
  ERROR_FILL,
  MIN_GAP,
  PrefixColors,
  actionLegend,
  fillOf,
  pickColor,
  prefixesByAppearance
} from '../src/view/colors';
import { T0, task } from './fixtures';

const index = (color: string): number => DASK_PALETTE.indexOf(color.toUpperCase());

describe('prefix colours', () => {
  it("keeps the dashboard's colour when it is far from those in use", () => {
    expect(pickColor('#FDE724', [])).toBe('#FDE724');
    expect(pickColor('#440154', ['#FDE724'])).toBe('#440154');
  });

  it('moves a prefix off a colour (or a neighbour) already shown', () => {
    // sum, sum-aggregate and chunk_sum all hash to #FDE724 in distributed
    const first = pickColor('#FDE724', []);
    const second = pickColor('#FDE724', [first]);
    const third = pickColor('#FDE724', [first, second]);
    expect(new Set([first, second, third]).size).toBe(3);
    for (const [a, b] of [
      [first, second],
      [first, third],
      [second, third]
    ]) {
      expect(Math.abs(index(a) - index(b))).toBeGreaterThanOrEqual(MIN_GAP);
    }
    // the neighbour of a colour in use is moved too
    expect(
      Math.abs(index(pickColor('#D7E219', ['#FDE724'])) - index('#FDE724'))
    ).toBeGreaterThanOrEqual(MIN_GAP);
  });

  it('is deterministic and keeps a choice while the prefix is shown', () => {
    const rects = [
      task(T0, T0 + 1, { prefix: 'sum', color: '#FDE724' }),
      task(T0 + 1, T0 + 2, { prefix: 'sum-aggregate', color: '#FDE724' }),
      task(T0 + 2, T0 + 3, { prefix: 'chunk_sum', color: '#FDE724' })
    ];
    const a = new PrefixColors().update(rects);
    const b = new PrefixColors().update([...rects].reverse());
    expect([...a.entries()]).toEqual([...b.entries()]);
    expect(new Set(a.values()).size).toBe(3);

    const colors = new PrefixColors();
    const before = new Map(colors.update(rects));
    // a new prefix does not repaint the others
    const after = colors.update([
      ...rects,
      task(T0 + 4, T0 + 5, { prefix: 'new', color: '#440154' })
    ]);
    for (const [prefix, color] of before) {
      expect(after.get(prefix)).toBe(color);
    }
    // a prefix gone from the view frees its colour
    colors.update([rects[2]]);
    expect([...colors.update([rects[2]]).keys()]).toEqual(['chunk_sum']);
  });

  it('orders prefixes by first start, compute tasks only', () => {
    const rects = [
      task(T0 + 5, T0 + 6, { prefix: 'b' }),
      task(T0 + 1, T0 + 2, { prefix: 'a' }),
      task(T0, T0 + 1, { prefix: 'x', action: 'transfer', color: ACTION_COLORS.transfer }),
      task(T0, T0 + 1, { prefix: 'e', error: true })
    ];
    expect(prefixesByAppearance(rects).map(([p]) => p)).toEqual(['a', 'b']);
  });

  it('fills errors black and other actions in their fixed colours', () => {
    const colors = new Map([['sum', '#123456']]);
    expect(fillOf(task(T0, T0 + 1, { prefix: 'sum' }), colors)).toBe('#123456');
    expect(fillOf(task(T0, T0 + 1, { error: true }), colors)).toBe(ERROR_FILL);
    expect(fillOf(task(T0, T0 + 1, { action: 'transfer', color: '#d9534f' }), colors)).toBe(
      '#d9534f'
    );
    expect(fillOf(task(T0, T0 + 1, { prefix: 'p', color: 'red; x' }), new Map())).toBe('#888888');
  });

  it('lists transfer, spill, deserialisation and errors with their colours', () => {
    const legend = actionLegend([task(T0, T0 + 1, { action: 'transfer', color: '#ff0000' })]);
    expect(legend.map(e => e.label)).toEqual(['transfer', 'spill (disk)', 'deserialise', 'error']);
    expect(legend[0].color).toBe('#ff0000'); // as seen in the frames
    expect(legend[1].color).toBe(ACTION_COLORS['disk-write']);
    expect(legend[2].color).toBe(ACTION_COLORS.deserialize);
    expect(legend[3]).toMatchObject({ color: ERROR_FILL, error: true });
  });
});
