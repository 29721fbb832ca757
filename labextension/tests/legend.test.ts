// @vitest-environment jsdom
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Frame } from '../src/view/frame';
import {
  Legend,
  MAX_PREFIXES,
  RECENT_ROWS,
  RecentWork,
  legendPrefixes,
  recentText,
  recentWork
} from '../src/view/legend';
import { MAX_ROWS, progressCaption, progressOrder } from '../src/view/progress';
import { T0, task } from './fixtures';

/** The frames a panel received on an H200 host: one long matmul_load, then a shuffle. */
function recorded(): Frame[] {
  const path = resolve(__dirname, '../../tests/fixtures/frames_h200.json');
  return (JSON.parse(readFileSync(path, 'utf8')) as { frames: Frame[] }).frames;
}

const colors = new Map([
  ['make', '#111111'],
  ['sum', '#222222']
]);

describe('legend and recent work', () => {
  it('lists compute prefixes, the one that took the most time first', () => {
    const rects = [
      task(T0, T0 + 6, { prefix: 'make' }),
      task(T0 + 6, T0 + 7, { prefix: 'sum' }),
      task(T0 + 7, T0 + 9, { prefix: 'x', action: 'transfer' })
    ];
    expect(legendPrefixes(rects, colors)).toEqual([
      { label: 'make', color: '#111111' },
      { label: 'sum', color: '#222222' }
    ]);
  });

  it('counts the prefixes the legend has no room for, their names in the tooltip', () => {
    const many = Array.from({ length: MAX_PREFIXES + 3 }, (_, i) =>
      task(T0, T0 + 100 - i, { prefix: `p${i}` })
    );
    const legend = new Legend();
    legend.update(many, new Map());
    const items = [...legend.node.querySelectorAll('.gpudask-legend-prefixes > *')];
    expect(items).toHaveLength(MAX_PREFIXES + 1);
    const more = items[MAX_PREFIXES] as HTMLElement;
    expect(more.textContent).toBe('and 3 more');
    const last = MAX_PREFIXES + 2;
    expect(more.title).toBe(`p${MAX_PREFIXES}, p${MAX_PREFIXES + 1}, p${last}`);
    expect(items[0].textContent).toBe('p0'); // the longest first
  });

  it('names the work that took the time in a recorded run, not the last small task', () => {
    const frames = recorded();
    const rects = frames.flatMap(f => f.tasks);
    const rows = recentWork(rects, new Map());
    expect(rows[0].name).toBe('matmul_load'); // 10 s, one task, long before the last sum-tree
    expect(recentText(rows[0])).toMatch(/^1 task · 10\.\d s each$/);
    const view = new RecentWork();
    view.update(rects, new Map());
    const text = view.node.textContent ?? '';
    expect(text).toContain('matmul_load');
    expect(text).toContain('shuffle-transfer');
    expect(rows.length).toBeGreaterThan(RECENT_ROWS); // so the "more" line is drawn
    expect(text).toContain(`and ${rows.length - RECENT_ROWS} more`);
    // every compute prefix drawn is in the legend
    const drawn = new Set(rects.filter(r => r.action === 'compute').map(r => r.prefix));
    const named = new Set(legendPrefixes(rects, new Map()).map(e => e.label));
    expect(named).toEqual(drawn);
  });

  it('never says more tasks run than the workers have threads, in a recorded run', () => {
    let waiting = 0;
    for (const frame of recorded()) {
      const threads = frame.workers.reduce((n, w) => n + w.nthreads, 0);
      const running = frame.progress
        .map(p => /(\d+) running/.exec(progressCaption(p)))
        .reduce((n, m) => n + (m ? Number(m[1]) : 0), 0);
      expect(running).toBeLessThanOrEqual(threads);
      waiting += frame.progress.filter(p => / waiting/.test(progressCaption(p))).length;
    }
    expect(waiting).toBeGreaterThan(0); // what the scheduler gave beyond the threads is told
  });

  it('sums up what ran by prefix, with readable names, no keys', () => {
    const rects = [
      task(T0, T0 + 0.1, { prefix: 'make', key: "('make-0123456789abcdef01', 0)" }),
      task(T0, T0 + 0.3, { prefix: 'make', key: "('make-0123456789abcdef01', 1)" }),
      task(T0 + 1, T0 + 1.002, { prefix: 'make', action: 'transfer', color: '#d9534f' }),
      task(T0 + 2, T0 + 2.5, { prefix: 'sum-aggregate-0123456789abcdef', error: true })
    ];
    const rows = recentWork(rects, colors);
    expect(rows.map(r => r.name)).toEqual(['sum-aggregate', 'make', 'transfer']);
    expect(recentText(rows[1])).toBe('2 tasks · 400 ms in all · 200 ms each');
    expect(recentText(rows[0])).toBe('1 task · 500 ms each · 1 failed');
    expect(rows[2].color).toBe('#d9534f');
    expect(rows[1].color).toBe('#111111');
    expect(JSON.stringify(rows)).not.toContain('0123456789');
  });

  it('puts running and failing prefixes first in progress', () => {
    const p = (
      prefix: string,
      total: number,
      done: number,
      processing = 0,
      erred = 0,
      running = processing
    ) => ({ prefix, total, done, processing, erred, running, color: '#3f69d3' });
    const ordered = progressOrder([
      p('done', 4, 4),
      p('todo', 4, 1),
      p('running', 4, 1, 2),
      p('bad', 2, 0, 0, 1)
    ]);
    expect(ordered.map(x => x.prefix)).toEqual(['running', 'bad', 'todo', 'done']);
    expect(progressCaption(p('x', 32, 12, 4, 1))).toBe('12 / 32 · 4 running · 1 failed');
    expect(progressCaption(p('x', 32, 12, 6, 0, 2))).toBe('12 / 32 · 2 running · 4 waiting');
    expect(progressCaption(p('x', 32, 12, 3, 0, 0))).toBe('12 / 32 · 3 waiting');
    expect(progressCaption(p('x', 32, 32))).toBe('32 / 32');
    expect(MAX_ROWS).toBeGreaterThan(3);
  });
});
