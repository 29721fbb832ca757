import { describe, expect, it } from 'vitest';
import { MAX_PREFIXES, legendPrefixes, recentText, recentWork } from '../src/view/legend';
import { MAX_ROWS, progressCaption, progressOrder } from '../src/view/progress';
import { T0, task } from './fixtures';

const colors = new Map([
  ['make', '#111111'],
  ['sum', '#222222']
]);

describe('legend and recent work', () => {
  it('lists compute prefixes, the most recently active first', () => {
    const rects = [
      task(T0, T0 + 1, { prefix: 'make' }),
      task(T0 + 1, T0 + 5, { prefix: 'sum' }),
      task(T0 + 1, T0 + 9, { prefix: 'x', action: 'transfer' })
    ];
    expect(legendPrefixes(rects, colors)).toEqual([
      { label: 'sum', color: '#222222' },
      { label: 'make', color: '#111111' }
    ]);
    const many = Array.from({ length: 30 }, (_, i) =>
      task(T0 + i, T0 + i + 1, { prefix: `p${i}` })
    );
    expect(legendPrefixes(many, new Map())).toHaveLength(MAX_PREFIXES);
  });

  it('sums up what ran by prefix, with readable names, no keys', () => {
    const rects = [
      task(T0, T0 + 0.1, { prefix: 'make', key: "('make-0123456789abcdef01', 0)" }),
      task(T0, T0 + 0.3, { prefix: 'make', key: "('make-0123456789abcdef01', 1)" }),
      task(T0 + 1, T0 + 1.002, { prefix: 'make', action: 'transfer', color: '#d9534f' }),
      task(T0 + 2, T0 + 2.5, { prefix: 'sum-aggregate-0123456789abcdef', error: true })
    ];
    const rows = recentWork(rects, colors);
    expect(rows.map(r => r.name)).toEqual(['sum-aggregate', 'transfer', 'make']);
    expect(recentText(rows[2])).toBe('2 tasks · 200 ms each');
    expect(recentText(rows[0])).toBe('1 task · 500 ms each · 1 failed');
    expect(rows[1].color).toBe('#d9534f');
    expect(rows[2].color).toBe('#111111');
    expect(JSON.stringify(rows)).not.toContain('0123456789');
  });

  it('puts running and failing prefixes first in progress', () => {
    const p = (prefix: string, total: number, done: number, processing = 0, erred = 0) => ({
      prefix,
      total,
      done,
      processing,
      erred
    });
    const ordered = progressOrder([
      p('done', 4, 4),
      p('todo', 4, 1),
      p('running', 4, 1, 2),
      p('bad', 2, 0, 0, 1)
    ]);
    expect(ordered.map(x => x.prefix)).toEqual(['running', 'bad', 'todo', 'done']);
    expect(progressCaption(p('x', 32, 12, 4, 1))).toBe('12 / 32 · 4 running · 1 failed');
    expect(progressCaption(p('x', 32, 32))).toBe('32 / 32');
    expect(MAX_ROWS).toBeGreaterThan(3);
  });
});
