/**
 * The task stream's rows (one lane per worker thread), their height, and what is under the
 * pointer: pure functions, no DOM.
 */
import { ACTION_LEGEND } from './colors';
import { TaskRect, WorkerInfo } from './frame';
import { formatClockPrecise, formatSeconds } from './format';
import { readablePrefix, shortKey, workerLabel } from './names';

export interface Lane {
  worker: string;
  thread: number;
  /** The worker's name, then "#n" where the worker has more than one thread: "worker 0",
   * "worker 0 #2". */
  label: string;
  /** The worker's name ("worker 0" for Dask's numbered workers); a worker that left the
   * cluster is marked "′" (a Scale or a Restart brings back workers of the same name at new
   * addresses: their lanes must not look alike). */
  name: string;
  /** The thread's place among the worker's threads seen, from 1. */
  place: number;
  /** The worker is no longer in the cluster. */
  gone: boolean;
}

/** The mark of a worker that left, after its name. */
export const GONE_MARK = '′';

/**
 * The stream's drawing area follows the view's width, AREA_PER_WIDTH of it between MIN_AREA and
 * MAX_AREA (CSS px), shared by the lanes, each between MIN_ROW and MAX_ROW: two lanes are 32 px
 * in a 250 px sidebar, 96 px in a notebook and 160 px in a panel on a projector, where a fixed
 * 18 px was a sliver at the back of a room.
 */
export const AREA_PER_WIDTH = 0.22;
export const MIN_AREA = 64;
export const MAX_AREA = 480;
export const MIN_ROW = 4;
export const MAX_ROW = 160;
/** Lane labels need this many times the axis font's height to be drawn. */
export const LABEL_ROW = 1.1;

export function rowHeight(lanes: number, width: number): number {
  const area = Math.min(MAX_AREA, Math.max(MIN_AREA, Math.floor(width * AREA_PER_WIDTH)));
  return Math.max(MIN_ROW, Math.min(MAX_ROW, Math.floor(area / Math.max(1, lanes))));
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
  return named ? workerLabel(named) : address.replace(/^[a-z]+:\/\//, '');
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
      .map((thread, index, all) => ({
        worker: address,
        thread,
        label: all.length > 1 ? `${nameOf(address)} #${index + 1}` : nameOf(address),
        name: nameOf(address),
        place: index + 1,
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
      ? `on ${lane.name}${lane.gone ? ` (left the cluster; was ${rect.worker})` : ''}`
      : `on ${rect.worker}`,
    `thread ${lane ? `#${lane.place}` : rect.thread}`,
    `start ${formatClockPrecise(rect.start)}`,
    `duration ${formatSeconds(rect.stop - rect.start)}`
  ];
}
