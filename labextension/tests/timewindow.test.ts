import { describe, expect, it } from 'vitest';
import {
  IDLE_SPAN,
  LINGER,
  MIN_SPAN,
  followRange,
  latestBurst,
  niceSpan,
  panRange,
  tasksInRange,
  visibleRange,
  windowEvents,
  zoomRange
} from '../src/view/timewindow';
import { T0, task } from './fixtures';

describe('the time window', () => {
  it('shows the last minute when nothing ran', () => {
    expect(followRange(T0, [], 300)).toEqual({ start: T0 - IDLE_SPAN, end: T0 });
    expect(followRange(T0, [], 10)).toEqual({ start: T0 - 10, end: T0 });
  });

  it('zooms to a running 3-second job instead of five minutes', () => {
    const job = [task(T0 - 3, T0 - 2), task(T0 - 2, T0 - 0.5), task(T0 - 1, T0)];
    const range = followRange(T0, job, 300);
    expect(range.end).toBe(T0);
    expect(range.end - range.start).toBe(MIN_SPAN);
    expect(range.start).toBeLessThanOrEqual(T0 - 3);
  });

  it('widens in steps as the work goes on', () => {
    const work = [task(T0 - 70, T0 - 1)];
    const span = followRange(T0, work, 300);
    expect(span.end - span.start).toBe(niceSpan(70 * 1.05));
    expect(span.end - span.start).toBe(90);
  });

  it('holds the window around a finished burst, however long ago', () => {
    const job = [task(T0 - 600, T0 - 598), task(T0 - 598, T0 - 597)];
    const range = followRange(T0, job, 3600);
    expect(range.start).toBeLessThan(T0 - 600);
    expect(range.end).toBeGreaterThan(T0 - 597);
    expect(range.end - range.start).toBe(MIN_SPAN);
    // just after it ended, it still follows now
    const fresh = followRange(T0 - 597 + LINGER / 2, job, 3600);
    expect(fresh.end).toBe(T0 - 597 + LINGER / 2);
  });

  it('follows the latest burst only', () => {
    const old = task(T0 - 200, T0 - 190);
    const recent = task(T0 - 5, T0 - 1);
    expect(latestBurst([old, recent])).toEqual({ start: T0 - 5, end: T0 - 1 });
    // small gaps chain tasks into one burst
    expect(latestBurst([task(T0 - 10, T0 - 8), task(T0 - 7, T0 - 1)])).toEqual({
      start: T0 - 10,
      end: T0 - 1
    });
    expect(latestBurst([])).toBeNull();
  });

  it('gives all history, or a fixed range, on request', () => {
    expect(visibleRange({ kind: 'all' }, T0, [], 300)).toEqual({ start: T0 - 300, end: T0 });
    expect(visibleRange({ kind: 'fixed', start: T0 - 50, end: T0 - 40 }, T0, [], 300)).toEqual({
      start: T0 - 50,
      end: T0 - 40
    });
    expect(visibleRange({ kind: 'follow' }, T0, [], 300)).toEqual(followRange(T0, [], 300));
  });

  it('zooms around a time and pans by a fraction', () => {
    const range = { start: 0, end: 100 };
    expect(zoomRange(range, 50, 0.5)).toEqual({ start: 25, end: 75 });
    expect(zoomRange(range, 0, 2)).toEqual({ start: 0, end: 200 });
    expect(zoomRange({ start: 0, end: 1 }, 0, 0.01).end).toBe(1); // never under 1 s
    expect(panRange(range, 0.1)).toEqual({ start: 10, end: 110 });
  });

  it('keeps the tasks that overlap the range', () => {
    const tasks = [task(0, 5, { key: 'before' }), task(8, 12, { key: 'across' }), task(20, 30)];
    expect(tasksInRange(tasks, { start: 10, end: 15 }).map(t => t.key)).toEqual(['across']);
  });

  it('turns chart gestures into window modes', () => {
    const set: unknown[] = [];
    const events = windowEvents(
      () => ({ start: 0, end: 100 }),
      mode => set.push(mode)
    );
    events.select({ start: 10, end: 20 });
    events.follow();
    events.zoom(50, 0.5);
    events.pan(0.1);
    expect(set).toEqual([
      { kind: 'fixed', start: 10, end: 20 },
      { kind: 'follow' },
      { kind: 'fixed', start: 25, end: 75 },
      { kind: 'fixed', start: 10, end: 110 }
    ]);
  });
});
