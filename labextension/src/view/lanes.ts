/**
 * The task stream's rows (one lane per worker thread), their height, and what is under the
 * pointer: pure functions, no DOM.
 */
import { ACTION_LEGEND } from './colors';
import { TaskRect, WorkerInfo } from './frame';
import { formatClockPrecise, formatSeconds } from './format';
import { readablePrefix, shortKey } from './names';

export interface Lane {
  worker: string;
  thread: number;
  /** "<worker name> #<n>": n counts the worker's threads seen, from 1. */
  label: string;
}

/** Lane height in CSS px: readable (ROW) for a few lanes, shrinking to fit MAX_HEIGHT. */
export const ROW = 18;
export const MIN_ROW = 4;
export const MAX_HEIGHT = 360;
/** Lane labels need this much height to be drawn. */
export const LABEL_ROW = 11;

export function rowHeight(lanes: number): number {
  return Math.max(MIN_ROW, Math.min(ROW, Math.floor(MAX_HEIGHT / Math.max(1, lanes))));
}

export function laneKey(worker: string, thread: number): string {
  return `${worker}\u0000${thread}`;
}

// numeric: "worker-10" after "worker-2"; one fixed locale so the order is the same everywhere
const collator = new Intl.Collator('en', { numeric: true });

/** The name a worker goes by: its Dask name, else its address without the protocol. */
export function workerName(address: string, workers: WorkerInfo[]): string {
  const named = workers.find(w => w.address === address)?.name;
  return named || address.replace(/^[a-z]+:\/\//, '');
}

/** One lane per (worker, thread) that has rectangles, ordered by worker name then thread. */
export function assignLanes(tasks: TaskRect[], workers: WorkerInfo[]): Lane[] {
  const threads = new Map<string, Set<number>>();
  for (const task of tasks) {
    let set = threads.get(task.worker);
    if (set === undefined) {
      set = new Set();
      threads.set(task.worker, set);
    }
    set.add(task.thread);
  }
  const names = new Map([...threads.keys()].map(a => [a, workerName(a, workers)]));
  const nameOf = (address: string): string => names.get(address) ?? address;
  const addresses = [...threads.keys()].sort(
    (a, b) => collator.compare(nameOf(a), nameOf(b)) || collator.compare(a, b)
  );
  return addresses.flatMap(address =>
    [...(threads.get(address) ?? [])]
      .sort((a, b) => a - b)
      .map((thread, index) => ({
        worker: address,
        thread,
        label: `${nameOf(address)} #${index + 1}`
      }))
  );
}

/**
 * The rectangle at time `t` in lane `lane` (index into `lanes`), or the nearest one that ends
 * or starts within `slack` seconds (thin rectangles are hard to hit). Null when none.
 */
export function taskAt(
  rects: TaskRect[],
  lanes: Lane[],
  lane: number,
  t: number,
  slack: number
): TaskRect | null {
  const target = lanes[lane];
  if (!target) {
    return null;
  }
  let best: TaskRect | null = null;
  let bestDistance = Infinity;
  for (const rect of rects) {
    if (rect.worker !== target.worker || rect.thread !== target.thread) {
      continue;
    }
    const distance = t < rect.start ? rect.start - t : t > rect.stop ? t - rect.stop : 0;
    if (distance <= slack && distance < bestDistance) {
      best = rect;
      bestDistance = distance;
      if (distance === 0 && rect.action === 'compute') {
        break;
      }
    }
  }
  return best;
}

/** The hover text of a rectangle, one fact per line. */
export function hoverLines(rect: TaskRect, lane: Lane | undefined): string[] {
  const what =
    rect.action === 'compute'
      ? readablePrefix(rect.prefix)
      : `${readablePrefix(rect.prefix)} (${ACTION_LEGEND[rect.action]})`;
  return [
    rect.error ? `${what}: failed` : what,
    `key ${shortKey(rect.key)}`,
    `worker ${lane ? lane.label.replace(/ #\d+$/, '') : rect.worker}`,
    `thread ${lane ? lane.label.replace(/^.* #/, '#') : rect.thread}`,
    `start ${formatClockPrecise(rect.start)}`,
    `duration ${formatSeconds(rect.stop - rect.start)}`
  ];
}
