import { describe, expect, it } from 'vitest';
import {
  MAX_AREA,
  MAX_ROW,
  MIN_ROW,
  assignLanes,
  hoverLines,
  rowHeight,
  taskAt,
  workerName
} from '../src/view/lanes';
import { labelChars, laneLabel, laneTicks } from '../src/view/taskchart';
import { T0, task, worker } from './fixtures';

describe('lanes', () => {
  it('gives one lane per (worker, thread), ordered by worker name then thread', () => {
    const a = 'tcp://127.0.0.1:1';
    const b = 'tcp://127.0.0.1:2';
    const lanes = assignLanes(
      [
        task(0, 1, { worker: b, thread: 7 }),
        task(0, 1, { worker: a, thread: 9 }),
        task(0, 1, { worker: a, thread: 3 }),
        task(0, 1, { worker: 'tcp://10.0.0.1:5', thread: 1 })
      ],
      [worker(a, 'worker-10'), worker(b, 'worker-2')]
    );
    expect(lanes.map(l => l.label)).toEqual([
      '10.0.0.1:5′', // not among the workers: it left
      'worker-2', // one thread: no thread number
      'worker-10 #1',
      'worker-10 #2'
    ]);
    expect(lanes[3]).toMatchObject({ worker: a, thread: 9 });
    expect(workerName('tls://h:1', [])).toBe('h:1');
  });

  it('tells apart the lanes of workers that left from their successors of the same name', () => {
    // a Restart: workers 0 and 1 come back at new addresses; the old lanes keep their names
    const old0 = 'tcp://127.0.0.1:41001';
    const old1 = 'tcp://127.0.0.1:41002';
    const new0 = 'tcp://127.0.0.1:42001';
    const new1 = 'tcp://127.0.0.1:42002';
    const rects = [old0, old1, new0, new1].map(w => task(0, 1, { worker: w }));
    const names = { [old0]: '0', [old1]: '1' };
    const lanes = assignLanes(rects, [worker(new0, '0'), worker(new1, '1')], names);
    // Dask's numbered workers are named, not bare numbers
    expect(lanes.map(l => l.label)).toEqual(['worker 0', 'worker 0′', 'worker 1', 'worker 1′']);
    const chars = labelChars(64, 12);
    expect(new Set(lanes.map(l => laneLabel(l.label, chars))).size).toBe(4);
    expect(lanes.map(l => laneLabel(l.label, chars)).every(l => l.length <= chars)).toBe(true);
    const hover = hoverLines(rects[0], lanes[1]);
    expect(hover[2]).toBe(`on worker 0′ (left the cluster; was ${old0})`);
    expect(hover[3]).toBe('thread #1');
  });

  it('makes rows as tall as the view is wide, shrinking only for many lanes', () => {
    const sidebar = rowHeight(2, 238);
    const notebook = rowHeight(2, 880);
    const projector = rowHeight(2, 1476);
    expect(sidebar).toBeGreaterThanOrEqual(30); // was 18 whatever the width
    expect(notebook).toBeGreaterThan(sidebar);
    expect(projector).toBeGreaterThan(notebook);
    expect(rowHeight(1, 5000)).toBe(MAX_ROW);
    expect(rowHeight(64, 1476) * 64).toBeLessThanOrEqual(MAX_AREA);
    expect(rowHeight(1000, 1476)).toBe(MIN_ROW);
  });

  it('labels every lane, or each worker once when rows are thin', () => {
    const lanes = assignLanes(
      [task(0, 1, { thread: 1 }), task(0, 1, { thread: 2 })],
      [worker('tcp://127.0.0.1:40001', 'w')]
    );
    expect(laneTicks(lanes, 32)).toEqual({ splits: [1.5, 0.5], labels: ['w', '#2'] });
    expect(laneTicks(lanes, MIN_ROW)).toEqual({ splits: [1.5], labels: ['w'] });
    // the end of a long name is kept: that is where names differ
    expect(laneLabel('a-very-long-worker-name #12', 9)).toBe('…name #12');
  });

  it('finds the task under the pointer, or the nearest within the slack', () => {
    const w = 'tcp://127.0.0.1:40001';
    const rects = [task(T0, T0 + 1, { key: 'a' }), task(T0 + 2, T0 + 3, { key: 'b' })];
    const lanes = assignLanes(rects, [worker(w, 'w')]);
    expect(taskAt(rects, lanes, 0, T0 + 0.5, 0)?.key).toBe('a');
    expect(taskAt(rects, lanes, 0, T0 + 1.5, 0)).toBeNull();
    expect(taskAt(rects, lanes, 0, T0 + 1.9, 0.2)?.key).toBe('b');
    expect(taskAt(rects, lanes, 5, T0 + 0.5, 0)).toBeNull();
  });

  it('says prefix, key, worker, thread, start and duration on hover', () => {
    const rect = task(T0 + 0.25, T0 + 0.2625, {
      key: "('sum-aggregate-0123456789abcdef0123', 3)",
      prefix: 'sum-aggregate'
    });
    const lanes = assignLanes([rect], [worker(rect.worker, 'worker-0')]);
    const lines = hoverLines(rect, lanes[0]);
    expect(lines[0]).toBe('sum-aggregate');
    expect(lines[1]).toBe("key ('sum-aggregate-012345…', 3)");
    expect(lines[2]).toBe('on worker-0');
    expect(lines[3]).toBe('thread #1');
    expect(lines[4]).toMatch(/^start \d\d:\d\d:\d\d\.250$/);
    expect(lines[5]).toBe('duration 12.5 ms');
    const failed = hoverLines({ ...rect, error: true, action: 'transfer' }, lanes[0]);
    expect(failed[0]).toBe('sum-aggregate (transfer between workers): failed');
  });
});
