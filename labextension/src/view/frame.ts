/**
 * The Frame: what the panel widget and the sidebar draw.
 *
 * Mirrors gpudask_jupyter/frame.py (keep the two in step; VERSION changes with any
 * incompatible change). Times are seconds since the epoch on the monitoring host's clock.
 */

export const VERSION = 1;

/** Order of the per-device values in a sample. */
export const SAMPLE_FIELDS = [
  'utilization', // percent, or null
  'memory_used', // bytes, or null
  'temperature', // degrees C, or null
  'power', // watts, or null
  'pcie_tx', // bytes/s device→host, or null (sampled every few seconds only)
  'pcie_rx' // bytes/s host→device, or null
] as const;

export type SampleField = (typeof SAMPLE_FIELDS)[number];

/** Index of each field in Sample.values[device]. */
export const FIELD = Object.fromEntries(
  SAMPLE_FIELDS.map((name, index) => [name, index])
) as Record<SampleField, number>;

export interface NvmlInfo {
  available: boolean;
  /** Why not available, in words ("" when available). */
  reason: string;
  driver: string | null;
}

export interface DeviceInfo {
  /** The key of this device in samples: a GPU/MIG UUID, or "worker:<address>". */
  id: string;
  /** "0", "0:1" (MIG), or the worker's name for a GPU seen through heartbeats. */
  label: string;
  /** "NVIDIA H200": user-visible text. */
  name: string;
  /** "" for this machine, else the worker's host. */
  host: string;
  mig: boolean;
  memory_total: number | null;
  /** Watts. */
  power_limit: number | null;
}

export interface Sample {
  t: number;
  /** Device id -> values in SAMPLE_FIELDS order. */
  values: Record<string, (number | null)[]>;
}

export interface WorkerGpu {
  device: string | null;
  name: string | null;
  utilization: number | null;
  memory_used: number | null;
  memory_total: number | null;
}

export interface WorkerInfo {
  address: string;
  name: string;
  host: string;
  nthreads: number;
  /** Host memory used, bytes. */
  memory: number | null;
  memory_limit: number | null;
  executing: number;
  ready: number;
  in_memory: number;
  gpu: WorkerGpu | null;
}

export type Action = 'compute' | 'transfer' | 'disk-read' | 'disk-write' | 'deserialize';

export interface TaskRect {
  /** Worker address. */
  worker: string;
  /** The worker thread's id: one lane per (worker, thread). */
  thread: number;
  start: number;
  stop: number;
  action: Action;
  /** The task key as text: user-controlled, only ever shown through textContent. */
  key: string;
  prefix: string;
  /** "#rrggbb". */
  color: string;
  error: boolean;
}

export interface PrefixProgress {
  prefix: string;
  total: number;
  done: number;
  processing: number;
  erred: number;
}

export interface ClusterInfo {
  state: 'running' | 'closed' | 'unreachable';
  /** "gpu", "cpu" or "attached". */
  mode: string;
  address: string;
  dashboard: string | null;
  /** Why closed/unreachable, in words ("" when running). */
  message: string;
}

export interface GpuProcess {
  device: string;
  pid: number;
  memory: number | null;
}

export interface Processes {
  own: GpuProcess[];
  /** Processes of other users: only counted. */
  others: number;
}

export interface Frame {
  version: number;
  kind: 'snapshot' | 'delta';
  time: number;
  /** Seconds between samples now. */
  interval: number;
  /** Seconds of history the monitor keeps. */
  history: number;
  nvml: NvmlInfo;
  devices: DeviceInfo[];
  samples: Sample[];
  cluster: ClusterInfo | null;
  workers: WorkerInfo[];
  tasks: TaskRect[];
  progress: PrefixProgress[];
  processes: Processes | null;
  messages: string[];
}

export const INTERVAL_RANGE = [0.25, 10] as const;
export const HISTORY_RANGE = [10, 3600] as const;
export const DEFAULT_INTERVAL = 1;
export const DEFAULT_HISTORY = 300;

function clamp(value: number, [low, high]: readonly [number, number], fallback: number): number {
  const n = Number(value);
  if (!Number.isFinite(n)) {
    return fallback;
  }
  return Math.min(high, Math.max(low, n));
}

/** Seconds between frames, as frame.py's clamp_interval (not a number: the default). */
export function clampInterval(seconds: number): number {
  return clamp(seconds, INTERVAL_RANGE, DEFAULT_INTERVAL);
}

/** Seconds of history shown, as frame.py's clamp_history (not a number: the default). */
export function clampHistory(seconds: number): number {
  return clamp(seconds, HISTORY_RANGE, DEFAULT_HISTORY);
}
