/**
 * The one time window shared by the GPU charts and the task stream.
 *
 * "follow" (the default) zooms to the work: the latest burst of tasks, from its start to now
 * while it runs and a little after, then held around the burst so that a 3-second job stays
 * readable after it ended; with no task at all, the last minute. "all" is the whole history the
 * view holds. "fixed" is what the user selected by dragging over a chart (or zoomed and panned
 * with the wheel); double-click or "Follow" goes back to following.
 */
import { TaskRect } from './frame';

export type WindowMode =
  { kind: 'follow' } | { kind: 'all' } | { kind: 'fixed'; start: number; end: number };

export interface TimeRange {
  start: number;
  end: number;
}

/** What the charts' gestures tell the view; the view owns the window and answers by repainting. */
export interface ChartEvents {
  select(range: TimeRange): void;
  follow(): void;
  zoom(at: number, factor: number): void;
  pan(fraction: number): void;
}

/** Seconds shown when there is no task to follow. */
export const IDLE_SPAN = 60;
/** The narrowest window, seconds. */
export const MIN_SPAN = 10;
/** Window widths, seconds: the span is rounded up to one of these so it changes in steps. */
export const NICE_SPANS = [
  10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 450, 600, 900, 1200, 1800, 2700, 3600
];
/** Tasks further apart than this (and than a tenth of the burst so far) start a new burst. */
export const BURST_GAP = 3;
/** After a burst ends, the window keeps following now for max(this, half the burst). */
export const LINGER = 10;

export function niceSpan(seconds: number): number {
  return NICE_SPANS.find(s => s >= seconds) ?? Math.ceil(seconds);
}

/** The latest burst of activity: tasks chained with gaps below BURST_GAP or 10 % of its span. */
export function latestBurst(tasks: TaskRect[]): TimeRange | null {
  if (tasks.length === 0) {
    return null;
  }
  const byStop = [...tasks].sort((a, b) => b.stop - a.stop);
  let start = byStop[0].start;
  const end = byStop[0].stop;
  for (const task of byStop) {
    const allowed = Math.max(BURST_GAP, 0.1 * (end - start));
    if (task.stop < start - allowed) {
      break; // sorted by stop: every later task ends before this gap too
    }
    start = Math.min(start, task.start);
  }
  return { start, end };
}

/** The window "follow" shows at `now`. */
export function followRange(now: number, tasks: TaskRect[], history: number): TimeRange {
  const limit = Math.max(MIN_SPAN, history);
  const burst = latestBurst(tasks.filter(t => t.stop >= now - limit));
  if (burst === null) {
    const span = Math.min(IDLE_SPAN, limit);
    return { start: now - span, end: now };
  }
  const length = burst.end - burst.start;
  if (now - burst.end <= Math.max(LINGER, length / 2)) {
    // live: from the burst's start (with a margin) to now, in steps
    const span = Math.min(limit, niceSpan(Math.max(MIN_SPAN, (now - burst.start) * 1.05)));
    return { start: now - span, end: now };
  }
  // the burst is over: hold the window around it
  const span = niceSpan(Math.max(MIN_SPAN, length * 1.1));
  const margin = (span - length) / 2;
  return { start: burst.start - margin, end: burst.end + margin };
}

/** The window of `mode` at `now`, within the view's history [now - history, now]. */
export function visibleRange(
  mode: WindowMode,
  now: number,
  tasks: TaskRect[],
  history: number
): TimeRange {
  switch (mode.kind) {
    case 'all':
      return { start: now - history, end: now };
    case 'fixed':
      return { start: mode.start, end: Math.max(mode.end, mode.start + 0.001) };
    default:
      return followRange(now, tasks, history);
  }
}

/** Zoom around `at` by `factor` (< 1 zooms in), never narrower than 1 s. */
export function zoomRange(range: TimeRange, at: number, factor: number): TimeRange {
  const span = Math.max(1, (range.end - range.start) * factor);
  const ratio = range.end > range.start ? (at - range.start) / (range.end - range.start) : 0.5;
  const start = at - ratio * span;
  return { start, end: start + span };
}

/** Move by `fraction` of the window's width (positive: later). */
export function panRange(range: TimeRange, fraction: number): TimeRange {
  const shift = (range.end - range.start) * fraction;
  return { start: range.start + shift, end: range.end + shift };
}

/** Items that overlap the range. */
export function tasksInRange(tasks: TaskRect[], range: TimeRange): TaskRect[] {
  return tasks.filter(r => r.stop >= range.start && r.start <= range.end);
}

/** What the charts' gestures do to the window shown now (`range`): the view sets the mode. */
export function windowEvents(range: () => TimeRange, set: (mode: WindowMode) => void): ChartEvents {
  return {
    select: selected => set({ kind: 'fixed', ...selected }),
    follow: () => set({ kind: 'follow' }),
    zoom: (at, factor) => set({ kind: 'fixed', ...zoomRange(range(), at, factor) }),
    pan: fraction => set({ kind: 'fixed', ...panRange(range(), fraction) })
  };
}
