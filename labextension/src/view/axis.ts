/**
 * The one time axis shared by the GPU history canvases and the task stream: both map a time to
 * x with the same window [now - history, now] and the same width, so that a task and the GPU
 * utilisation it caused line up vertically.
 */
import { Sample, TaskRect } from './frame';

export interface TimeAxis {
  start: number;
  end: number;
  /** CSS pixels. */
  width: number;
  x(t: number): number;
}

export function timeAxis(now: number, history: number, width: number): TimeAxis {
  const start = now - history;
  const scale = history > 0 ? width / history : 0;
  return { start, end: now, width, x: t => (t - start) * scale };
}

/** Rectangles that overlap the window. */
export function tasksInWindow(tasks: TaskRect[], axis: TimeAxis): TaskRect[] {
  return tasks.filter(r => r.stop >= axis.start && r.start <= axis.end);
}

export function samplesInWindow(samples: Sample[], axis: TimeAxis): Sample[] {
  return samples.filter(s => s.t >= axis.start && s.t <= axis.end);
}

/** The x extent of a rectangle, clipped to the window and at least one pixel wide. */
export function rectExtent(rect: TaskRect, axis: TimeAxis): [number, number] {
  const x0 = axis.x(Math.max(rect.start, axis.start));
  const x1 = axis.x(Math.min(rect.stop, axis.end));
  return [x0, Math.max(1, x1 - x0)];
}
