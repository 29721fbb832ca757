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
  /** The worker's name; a worker that left the cluster is marked "′" (a Scale or a Restart
   * brings back workers of the same name at new addresses: their lanes must not look alike). */
  name: string;
  /** The worker is no longer in the cluster. */
  gone: boolean;
}

/** The mark of a worker that left, after its name. */
export const GONE_MARK = '′';

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

/** The name a worker goes by: its Dask name (from the frames, or remembered in `names` for a
 * worker that left), else its address without the protocol. */
export function workerName(
  address: string,
  workers: WorkerInfo[],
  names: Readonly<Record<string, string>> = {}
): string {
  const named = workers.find(w => w.address === address)?.name || names[address];
  return named || address.replace(/^[a-z]+:\/\//, '');
}

/**
 * One lane per (worker, thread) that has rectangles, ordered by worker name (workers still in
 * the cluster before those of the same name that left) then thread. `names` remembers the names
 * of workers that left.
 */
export function assignLanes(
  tasks: TaskRect[],
  workers: WorkerInfo[],
  names: Readonly<Record<string, string>> = {}
): Lane[] {
  const threads = new Map<string, Set<number>>();
  for (const task of tasks) {
    let set = threads.get(task.worker);
    if (set === undefined) {
      set = new Set();
      threads.set(task.worker, set);
    }
    set.add(task.thread);
  }
  const current = new Set(workers.map(w => w.address));
  const goneOf = (address: string): boolean => current.size > 0 && !current.has(address);
  const named = new Map([...threads.keys()].map(a => [a, workerName(a, workers, names)]));
  const nameOf = (address: string): string => {
    const name = named.get(address) ?? address;
    return goneOf(address) ? `${name}${GONE_MARK}` : name;
  };
  const addresses = [...threads.keys()].sort(
    (a, b) =>
      collator.compare(named.get(a) ?? a, named.get(b) ?? b) ||
      Number(goneOf(a)) - Number(goneOf(b)) ||
      collator.compare(a, b)
  );
  return addresses.flatMap(address =>
    [...(threads.get(address) ?? [])]
      .sort((a, b) => a - b)
      .map((thread, index) => ({
        worker: address,
        thread,
        label: `${nameOf(address)} #${index + 1}`,
        name: nameOf(address),
        gone: goneOf(address)
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
    lane
      ? `worker ${lane.name}${lane.gone ? ` (left the cluster; was ${rect.worker})` : ''}`
      : `worker ${rect.worker}`,
    `thread ${lane ? lane.label.replace(/^.* #/, '#') : rect.thread}`,
    `start ${formatClockPrecise(rect.start)}`,
    `duration ${formatSeconds(rect.stop - rect.start)}`
  ];
}
