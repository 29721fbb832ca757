/**
 * The view's state and the pure functions that apply frames to it (no DOM here).
 *
 * A snapshot replaces the state; a delta appends its samples and task rectangles and replaces
 * everything else (those lists are small and sent whole). Samples and rectangles are pruned to
 * the monitor's history and capped, so that a view left open for hours stays small.
 *
 * A stopped cluster stays: when the frames say "stopped", or stop naming the cluster the view
 * showed (the kernel restarted, its registry entry went), the view keeps its tasks, workers and
 * progress, marked stopped, until a new cluster starts or the user clears them (`clearStopped`).
 */
import { DEFAULT_HISTORY, DEFAULT_INTERVAL, Frame, NvmlInfo, TaskRect, VERSION } from './frame';

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
  /** Each device's bytes held by the cluster's workers, as the frames reported them. */
  clusterMemory: ClusterMemoryPoint[];
  /** The address of a stopped cluster the user cleared: its history is not shown again. */
  cleared: string | null;
  /** Worker address -> name, for the workers of the tasks held: a worker that left keeps its
   * name on its lanes. */
  workerNames: Record<string, string>;
}

export interface ClusterMemoryPoint {
  t: number;
  bytes: Record<string, number>;
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
    room: null,
    gpu_time: null,
    errors: [],
    clusterMemory: [],
    cleared: null,
    workerNames: {}
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

export function pruneSamples<S extends { t: number }>(
  samples: S[],
  cutoff: number,
  max: number
): S[] {
  return keepRecent(samples, s => s.t, cutoff, max);
}

/** A rectangle stays while any part of it is within the history. */
export function pruneTasks(tasks: TaskRect[], cutoff: number, max: number): TaskRect[] {
  return keepRecent(tasks, r => r.stop, cutoff, max);
}

function clusterMemoryPoint(frame: Frame): ClusterMemoryPoint[] {
  const bytes: Record<string, number> = {};
  let any = false;
  for (const device of frame.devices ?? []) {
    if (typeof device.cluster_memory === 'number' && Number.isFinite(device.cluster_memory)) {
      bytes[device.id] = device.cluster_memory;
      any = true;
    }
  }
  return any ? [{ t: frame.time, bytes }] : [];
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
  const next: ViewState = {
    frames: state.frames + 1,
    time: frame.time,
    interval: Number.isFinite(frame.interval) ? frame.interval : state.interval,
    history,
    nvml: frame.nvml ?? null,
    devices: frame.devices ?? [],
    samples: pruneSamples(base.samples.concat(frame.samples ?? []), cutoff, limits.maxSamples),
    cluster: frame.cluster ?? null,
    workers: frame.workers ?? [],
    tasks: base.tasks.concat(frame.tasks ?? []),
    progress: frame.progress ?? [],
    processes: frame.processes ?? null,
    waiting: frame.waiting ?? [],
    messages: frame.messages ?? [],
    room: frame.room ?? null,
    gpu_time: frame.gpu_time ?? null,
    errors: [],
    clusterMemory: pruneSamples(
      base.clusterMemory.concat(clusterMemoryPoint(frame)),
      cutoff,
      limits.maxSamples
    ),
    cleared: state.cleared,
    workerNames: state.workerNames
  };
  const kept = keepStopped(state, next);
  // a stopped cluster's tasks stay whatever their age; a running one's follow the history
  kept.tasks = pruneTasks(
    kept.tasks,
    kept.cluster?.state === 'stopped' ? -Infinity : cutoff,
    limits.maxTasks
  );
  kept.workerNames = rememberNames(state.workerNames, kept);
  return kept;
}

/** The names of the workers of `state`'s tasks: the frame's, else those remembered. */
function rememberNames(known: Record<string, string>, state: ViewState): Record<string, string> {
  const names: Record<string, string> = {};
  const named = new Map(state.workers.map(w => [w.address, w.name]));
  for (const task of state.tasks) {
    const name = named.get(task.worker) || known[task.worker];
    if (name && !(task.worker in names)) {
      names[task.worker] = name;
    }
  }
  return names;
}

/** `next`, keeping the cluster `prev` showed when the frames stopped naming it. */
function keepStopped(prev: ViewState, next: ViewState): ViewState {
  const shown = prev.cluster;
  if (next.cluster === null && shown !== null && prev.cleared !== shown.address) {
    return {
      ...next,
      cluster: {
        ...shown,
        state: 'stopped',
        stopped_at: shown.stopped_at ?? prev.time ?? next.time
      },
      workers: next.workers.length > 0 ? next.workers : prev.workers,
      tasks: prev.tasks.concat(next.tasks.filter(t => !prev.tasks.includes(t))),
      progress: next.progress.length > 0 ? next.progress : prev.progress,
      gpu_time: next.gpu_time ?? prev.gpu_time,
      waiting: []
    };
  }
  if (next.cluster?.state === 'stopped' && next.cleared === next.cluster.address) {
    return {
      ...next,
      cluster: null,
      workers: [],
      tasks: [],
      progress: [],
      waiting: [],
      gpu_time: null
    };
  }
  if (next.cluster !== null && next.cluster.state !== 'stopped') {
    return { ...next, cleared: null };
  }
  return next;
}

/** Forget a stopped cluster's history (the Clear button): it is not shown again. */
export function clearStopped(state: ViewState): ViewState {
  const cluster = state.cluster;
  if (cluster === null || cluster.state !== 'stopped') {
    return state;
  }
  return {
    ...state,
    cluster: null,
    workers: [],
    tasks: [],
    progress: [],
    waiting: [],
    gpu_time: null,
    cleared: cluster.address
  };
}

/** The state with its cluster marked stopped at `at` (its kernel went away: nothing more comes). */
export function markStopped(state: ViewState, at: number): ViewState {
  const cluster = state.cluster;
  if (cluster === null || cluster.state === 'stopped') {
    return state;
  }
  // nothing runs on a cluster whose kernel went away: no worker or prefix keeps a running count
  return {
    ...state,
    cluster: { ...cluster, state: 'stopped', stopped_at: at },
    workers: state.workers.map(w => ({ ...w, executing: 0, ready: 0 })),
    progress: state.progress.map(p => ({ ...p, processing: 0, running: 0 }))
  };
}
