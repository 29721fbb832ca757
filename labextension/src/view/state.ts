/**
 * The view's state and the pure functions that apply frames to it (no DOM here).
 *
 * A snapshot replaces the state; a delta appends its samples and task rectangles and replaces
 * everything else (those lists are small and sent whole). Samples and rectangles are pruned to
 * the monitor's history and capped, so that a view left open for hours stays small.
 */
import {
  DEFAULT_HISTORY,
  DEFAULT_INTERVAL,
  Frame,
  NvmlInfo,
  Sample,
  TaskRect,
  VERSION,
  WorkerInfo
} from './frame';

export interface Limits {
  maxSamples: number;
  maxTasks: number;
}

/** At 4 samples/s, 20 000 samples are 83 minutes: more than the longest history. */
export const LIMITS: Limits = { maxSamples: 20000, maxTasks: 50000 };

/** A frame's content as the view holds it, between frames and before the first one. */
export interface ViewState extends Omit<Frame, 'version' | 'kind' | 'time' | 'nvml'> {
  /** Frames applied (refused frames are not counted). */
  frames: number;
  /** Time of the latest frame, seconds since the epoch; null before the first. */
  time: number | null;
  nvml: NvmlInfo | null;
  /** Why the last frame was refused, in words; cleared by the next good frame. */
  errors: string[];
}

export function emptyState(): ViewState {
  return {
    frames: 0,
    time: null,
    interval: DEFAULT_INTERVAL,
    history: DEFAULT_HISTORY,
    nvml: null,
    devices: [],
    samples: [],
    cluster: null,
    workers: [],
    tasks: [],
    progress: [],
    processes: null,
    waiting: [],
    messages: [],
    errors: []
  };
}

/** Why this value cannot be applied as a frame, or null when it can. */
export function frameProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) {
    return 'Ignored a frame that is not an object.';
  }
  const frame = value as Partial<Frame>;
  if (typeof frame.version !== 'number') {
    return (
      `Ignored a frame without a version number: this view reads frames of version ${VERSION}. ` +
      'The Python package and its front end differ: reinstall gpudask-jupyter and reload the page.'
    );
  }
  if (frame.version !== VERSION) {
    return (
      `Ignored a frame of version ${frame.version}, which this view does not know: it reads ` +
      `version ${VERSION}. The Python package and its front end differ: reinstall ` +
      'gpudask-jupyter and reload the page.'
    );
  }
  if (frame.kind !== 'snapshot' && frame.kind !== 'delta') {
    return `Ignored a frame of unknown kind ${String(frame.kind)}.`;
  }
  if (typeof frame.time !== 'number' || !Number.isFinite(frame.time)) {
    return 'Ignored a frame without a time.';
  }
  return null;
}

/** The last `max` items of those that end at or after `cutoff`. */
function keepRecent<T>(items: T[], end: (item: T) => number, cutoff: number, max: number): T[] {
  const kept = items.filter(item => end(item) >= cutoff);
  return kept.length > max ? kept.slice(kept.length - max) : kept;
}

export function pruneSamples(samples: Sample[], cutoff: number, max: number): Sample[] {
  return keepRecent(samples, s => s.t, cutoff, max);
}

/** A rectangle stays while any part of it is within the history. */
export function pruneTasks(tasks: TaskRect[], cutoff: number, max: number): TaskRect[] {
  return keepRecent(tasks, r => r.stop, cutoff, max);
}

/**
 * The state after `value`: a new object, `state` is not changed. A value that is not a frame of
 * this version leaves the data as it was and says why in `errors`.
 */
export function applyFrame(state: ViewState, value: unknown, limits: Limits = LIMITS): ViewState {
  const problem = frameProblem(value);
  if (problem !== null) {
    return { ...state, errors: [problem] };
  }
  const frame = value as Frame;
  const history = Number.isFinite(frame.history) ? frame.history : state.history;
  const base = frame.kind === 'snapshot' ? emptyState() : state;
  const cutoff = frame.time - history;
  return {
    frames: state.frames + 1,
    time: frame.time,
    interval: Number.isFinite(frame.interval) ? frame.interval : state.interval,
    history,
    nvml: frame.nvml ?? null,
    devices: frame.devices ?? [],
    samples: pruneSamples(base.samples.concat(frame.samples ?? []), cutoff, limits.maxSamples),
    cluster: frame.cluster ?? null,
    workers: frame.workers ?? [],
    tasks: pruneTasks(base.tasks.concat(frame.tasks ?? []), cutoff, limits.maxTasks),
    progress: frame.progress ?? [],
    processes: frame.processes ?? null,
    waiting: frame.waiting ?? [],
    messages: frame.messages ?? [],
    errors: []
  };
}

export interface Lane {
  worker: string;
  thread: number;
  /** "<worker name> #<n>": n counts the worker's threads seen, from 1. */
  label: string;
}

export function laneKey(worker: string, thread: number): string {
  return `${worker}\u0000${thread}`;
}

// numeric: "worker-10" after "worker-2"; one fixed locale so the order is the same everywhere
const collator = new Intl.Collator('en', { numeric: true });

/** One lane per (worker, thread) that has rectangles, ordered by worker name then thread. */
export function assignLanes(tasks: TaskRect[], workers: WorkerInfo[]): Lane[] {
  const names = new Map(workers.map(w => [w.address, w.name || w.address]));
  const threads = new Map<string, Set<number>>();
  for (const task of tasks) {
    let set = threads.get(task.worker);
    if (set === undefined) {
      set = new Set();
      threads.set(task.worker, set);
    }
    set.add(task.thread);
  }
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
