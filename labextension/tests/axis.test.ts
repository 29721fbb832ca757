import { describe, expect, it } from 'vitest';
import { rectExtent, samplesInWindow, tasksInWindow, timeAxis } from '../src/view/axis';
import { T0, gpuSample, task } from './fixtures';

describe('timeAxis', () => {
  it('maps [now - history, now] onto [0, width]', () => {
    const axis = timeAxis(T0, 60, 600);
    expect(axis.start).toBe(T0 - 60);
    expect(axis.end).toBe(T0);
    expect(axis.x(T0 - 60)).toBe(0);
    expect(axis.x(T0 - 30)).toBe(300);
    expect(axis.x(T0)).toBe(600);
  });

  it('keeps what overlaps the window', () => {
    const axis = timeAxis(T0, 10, 100);
    const tasks = [
      task(T0 - 30, T0 - 11, { key: 'before' }),
      task(T0 - 12, T0 - 9, { key: 'straddles' }),
      task(T0 - 1, T0, { key: 'inside' })
    ];
    expect(tasksInWindow(tasks, axis).map(t => t.key)).toEqual(['straddles', 'inside']);
    const samples = [gpuSample(T0 - 11, 1, 1), gpuSample(T0 - 10, 1, 1), gpuSample(T0, 1, 1)];
    expect(samplesInWindow(samples, axis).map(s => s.t)).toEqual([T0 - 10, T0]);
  });

  it('clips rectangles to the window and keeps them one pixel wide', () => {
    const axis = timeAxis(T0, 10, 100);
    expect(rectExtent(task(T0 - 12, T0 - 5), axis)).toEqual([0, 50]);
    expect(rectExtent(task(T0 - 5, T0 - 5), axis)).toEqual([50, 1]);
  });
});
