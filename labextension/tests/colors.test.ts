import { describe, expect, it } from 'vitest';
import { ACTION_COLORS, ERROR_FILL, actionLegend, fillOf, prefixColors } from '../src/view/colors';
import { PALETTE } from '../src/view/frame';
import { GPU_COLORS } from '../src/view/gpucharts';
import { T0, task } from './fixtures';

describe('prefix colours', () => {
  it("takes each prefix's colour from the frames, so every view of a cluster agrees", () => {
    const rects = [
      task(T0, T0 + 1, { prefix: 'sum', color: PALETTE[0] }),
      task(T0 + 1, T0 + 2, { prefix: 'sum-aggregate', color: PALETTE[1] }),
      task(T0 + 2, T0 + 3, { prefix: 'x', action: 'transfer', color: ACTION_COLORS.transfer }),
      task(T0 + 3, T0 + 4, { prefix: 'bad', error: true, color: ERROR_FILL })
    ];
    const progress = [
      { prefix: 'sum', total: 1, done: 1, processing: 0, erred: 0, running: 0, color: PALETTE[0] },
      { prefix: 'later', total: 4, done: 0, processing: 2, erred: 0, running: 2, color: PALETTE[2] }
    ];
    // the inline panel and a view opened later (fewer rectangles) give the same answer
    const inline = prefixColors(rects, progress);
    const later = prefixColors([...rects].slice(1).reverse(), progress);
    expect([...inline.entries()]).toEqual([
      ['sum', PALETTE[0]],
      ['sum-aggregate', PALETTE[1]],
      ['later', PALETTE[2]]
    ]);
    for (const [prefix, color] of later) {
      expect(inline.get(prefix)).toBe(color);
    }
    expect(GPU_COLORS).toBe(PALETTE); // one palette for prefixes and GPUs
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

describe('prefixes beyond the palette', () => {
  it('are one "other" entry in the legend, never a palette colour twice', async () => {
    const { legendPrefixes } = await import('../src/view/legend');
    const { OTHER_COLOR } = await import('../src/view/frame');
    const rects = PALETTE.map((color, i) =>
      task(T0 + i, T0 + i + 1, { prefix: `p${i}`, color })
    ).concat([
      task(T0, T0 + 0.5, { prefix: 'min', color: OTHER_COLOR }),
      task(T0, T0 + 0.25, { prefix: 'repartitiontofewer', color: OTHER_COLOR })
    ]);
    const entries = legendPrefixes(rects, prefixColors(rects));
    const colored = entries.filter(e => e.color !== OTHER_COLOR);
    expect(new Set(colored.map(e => e.color)).size).toBe(colored.length);
    expect(colored).toHaveLength(PALETTE.length);
    const other = entries.filter(e => e.color === OTHER_COLOR);
    expect(other).toEqual([
      { label: 'other (2 prefixes)', color: OTHER_COLOR, title: 'min, repartitiontofewer' }
    ]);
  });
});
