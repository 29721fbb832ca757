/**
 * Generated from gpudask_jupyter/schema/frame.py by scripts/generate_ts.py: do not edit
 * (tests/cpu/test_schema.py checks it).
 */

/** Frames of another version are refused by the view, with a message. */
export const VERSION = 3;

/** The per-device values of a sample, in their order on the wire (DeviceReading). */
export const SAMPLE_FIELDS = [
  'utilization', // Percent.
  'memory_used', // Bytes.
  'temperature', // Degrees C.
  'power', // Watts.
  'pcie_tx', // Bytes/s device to host (sampled every few seconds only).
  'pcie_rx' // Bytes/s host to device (sampled every few seconds only).
] as const;

/**
 * The words for a worker's task counts, the same in the panel, the sidebar, `status` and the
 * panel's text: "in memory" beside "Host memory" read as a size.
 */
export const WORKER_COUNTS = {
  executing: 'running',
  ready: 'ready',
  in_memory: 'results held'
} as const;

/**
 * The colours of task prefixes (the n-th prefix the scheduler saw takes the n-th, cycling) and of
 * GPUs (the n-th GPU of a view), made by `scripts/palette.py`: each seen on both JupyterLab themes
 * (3:1 contrast), none greyish or near a fixed action colour, every first n as far apart as such
 * colours can be, so that a pipeline of up to 20 prefixes shows no colour twice. Dask's own
 * per-prefix colours (Viridis) do not meet the contrast at either end. `tests/cpu/test_palette.py`
 * measures these with a colour library and checks the list is the script's.
 */
export const PALETTE = [
  '#3f69d3',
  '#889800',
  '#f85000',
  '#f80098',
  '#00a0a0',
  '#906830',
  '#008040',
  '#a800f8',
  '#a080b8',
  '#0098d8',
  '#a05868',
  '#007890',
  '#00a810',
  '#e848f8',
  '#b08800',
  '#c08060',
  '#60a078',
  '#707020',
  '#a05098',
  '#b05020'
] as const;

/** The colours of what is not a computation: the Dask dashboard's red, orange and grey. */
export const ACTION_COLORS = {
  transfer: '#d9534f',
  'disk-read': '#f0ad4e',
  'disk-write': '#f0ad4e',
  deserialize: '#9e9e9e'
} as const;

/** The fill of a task that failed. */
export const ERROR_COLOR = '#000000';

/**
 * The fill of compute prefixes beyond the palette's colours in a view ("other"): a neutral slate,
 * told apart from every palette and action colour (`tests/cpu/test_palette.py`), so that no two
 * prefixes a view draws ever share a colour.
 */
export const OTHER_COLOR = '#707080';

export const INTERVAL_RANGE = [0.25, 10] as const;

export const HISTORY_RANGE = [10, 3600] as const;

export const DEFAULT_INTERVAL = 1;

export const DEFAULT_HISTORY = 300;

/** One device's values in a sample: DeviceReading's fields, in their order. */
export type DeviceValues = [
  utilization: number | null,
  memory_used: number | null,
  temperature: number | null,
  power: number | null,
  pcie_tx: number | null,
  pcie_rx: number | null
];

/** What a worker thread did during a task-stream rectangle. */
export type Action = 'compute' | 'transfer' | 'disk-read' | 'disk-write' | 'deserialize';

/**
 * Whether the monitor reaches the cluster's scheduler: "connecting" until its first answer,
 * "unreachable" when it does not answer (or never did), "closed" when its client was closed, and
 * "stopped" once the kernel stopped it (its history stays, greyed, until a new cluster starts).
 */
export type ClusterState = 'connecting' | 'running' | 'closed' | 'unreachable' | 'stopped';

export interface NvmlInfo {
  available: boolean;
  /** Why not available, in words ("" when available). */
  reason: string;
  driver: string | null;
}

export interface DeviceInfo {
  /** The key of this device in samples: a GPU/MIG UUID, or "worker:<address>". */
  id: string;
  /**
   * The device's title: "0", "0:1" (MIG), or the worker's name for a GPU seen through heartbeats.
   */
  label: string;
  /** The model, e.g. "NVIDIA H200": user-visible text. */
  name: string;
  /** The worker's host; empty for this machine. */
  host: string;
  mig: boolean;
  memory_total: number | null;
  /** Watts. */
  power_limit: number | null;
  /**
   * Bytes of this device held now by the cluster's worker processes (the rest of the used memory is
   * other processes'); None where unknown (no NVML process list, a remote GPU).
   */
  cluster_memory: number | null;
}

export interface Sample {
  t: number;
  /** Device id -> values in SAMPLE_FIELDS order. */
  values: Record<string, DeviceValues>;
}

/** A worker's GPU as its heartbeats report it. */
export interface WorkerGpu {
  /** Device id in the frame's devices (local UUID or "worker:<address>"). */
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
  /** Tasks running now (the worker's own count, from its heartbeat). */
  executing: number;
  /** Tasks ready to run, waiting for a thread. */
  ready: number;
  /** Task results the worker holds. */
  in_memory: number;
  gpu: WorkerGpu | null;
  /**
   * Started or lent by this kernel (`start`, `join`); false for the other workers of a scheduler it
   * attached to or joined.
   */
  ours: boolean;
}

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
  /** The key's prefix, e.g. "read_parquet". */
  prefix: string;
  /**
   * As "#rrggbb": by prefix for compute (the PALETTE colour of the prefix's slot, kept by the
   * scheduler for every view of the cluster; OTHER_COLOR when every colour is taken); fixed for the
   * other actions.
   */
  color: string;
  error: boolean;
}

export interface PrefixProgress {
  prefix: string;
  total: number;
  /** In memory, released or forgotten after running. */
  done: number;
  /** Given to a worker: running there or waiting for one of its threads. */
  processing: number;
  /** The prefix's colour, as its tasks' rectangles have it. */
  color: string;
  /**
   * Running on a worker thread now, from the workers' heartbeats: never more than their threads, so
   * the view can say "running" of these and "waiting" of the rest.
   */
  running: number;
  erred: number;
}

export interface ClusterInfo {
  state: ClusterState;
  /**
   * One of "gpu", "cpu", "attached", "joined" (this kernel lent workers to a scheduler elsewhere;
   * its own are the workers marked `ours`) or "gateway" (a cluster of dask-gateway).
   */
  mode: string;
  address: string;
  dashboard: string | null;
  /** Why closed/unreachable, in words ("" when running). */
  message: string;
  /** When the cluster stopped (state "stopped"), seconds since the epoch; else None. */
  stopped_at: number | null;
}

/** Tasks that wait for a worker resource (`resources={"GPU": 1}`) no worker offers. */
export interface ResourceWait {
  resource: string;
  tasks: number;
}

/** A compute process of the current user on one device. */
export interface ProcessInfo {
  device: string;
  pid: number;
  memory: number | null;
}

export interface Processes {
  own: ProcessInfo[];
  /** Processes of other users: only counted. */
  others: number;
}

/**
 * A holder of a share of one GPU whom the viewer may see: their own kernels always, other people
 * only where the `room-names` option shows this user names.
 */
export interface RoomHolder {
  /**
   * "you" (the kernel this view follows), "you (kernel 1234)" (another kernel of this user) or a
   * user name: user-visible text.
   */
  who: string;
  /** The lease of the kernel this view follows. */
  you: boolean;
  /** Bytes of the GPU's memory the holder may take. */
  share: number;
  /**
   * Where the share is lent (a room nobody planned: shares follow the holders present), the bytes
   * the room keeps for this holder whoever comes; None where the share itself is promised (a
   * planned room). "15 GiB share" beside "15 GiB not promised" read as a bug without it.
   */
  relied_on: number | null;
  /** Bytes in use on this GPU by the holder's processes; None where unknown (no NVML). */
  used: number | null;
  /**
   * Percent of the GPU's multiprocessors the holder's processes use, where NVML samples it per
   * process; else None.
   */
  utilization: number | null;
  /** When the holder last worked (a magic, a task), seconds since the epoch. */
  last_work: number;
  /** Using more than the share and its CUDA contexts. */
  above: boolean;
  /** No work for longer than the room's idle time (`RoomInfo.idle_after`). */
  idle: boolean;
}

/** One GPU of the room: what it has, who holds it, what is left. */
export interface RoomGpu {
  /** The GPU's UUID: a device's id where the frame lists it. */
  id: string;
  label: string;
  /** The model, e.g. "NVIDIA H200": user-visible text. */
  name: string;
  memory_total: number;
  /** Bytes in use on the GPU, everybody's; None where unknown (no NVML). */
  memory_used: number | null;
  /** Percent, the whole GPU. */
  utilization: number | null;
  /** Leases on this GPU, the viewer's included. */
  holders: number;
  /** Bytes of its memory no share (nor its CUDA contexts) is promised: what is left to give. */
  not_promised: number;
  /** The holders the viewer may see, the kernel this view follows first. */
  shown: RoomHolder[];
  /** Holders not shown: other people, counted only. */
  others: number;
  others_idle: number;
  /** Of the holders not shown, how many use more than their share. */
  others_above: number;
}

/**
 * The room of a shared GPU server (students, each with a lease on a share of a GPU) as this user
 * may see it; read every few seconds.
 */
export interface RoomInfo {
  gpus: RoomGpu[];
  /** Whether this user sees other holders' names (the `room-names` option). */
  names: boolean;
  /** Seconds without work after which a holder counts as idle (the `room-idle` option). */
  idle_after: number;
}

/** One task prefix's GPU time in the view's window, from the workers' GPU-time plugin. */
export interface GpuTimeRow {
  prefix: string;
  /** As the task stream draws the prefix. */
  color: string;
  /** Tasks of the prefix that ended in the window. */
  tasks: number;
  /** Seconds the tasks ran, summed. */
  wall: number;
  /** Seconds the GPU worked for them, summed. */
  gpu: number;
  /** Bytes: the highest of the tasks' RMM peaks above their start; None where not measured. */
  peak: number | null;
  /** Bytes copied host to device by the tasks (0 where the source counts no copies). */
  htod: number;
  /** Bytes copied device to host. */
  dtoh: number;
  /** Some task ran beside another on its worker: their shared moments were split evenly. */
  shared: boolean;
}

export interface GpuTime {
  /** Most GPU seconds first. */
  rows: GpuTimeRow[];
  /**
   * How the workers measure, in words: the source and its resolution per worker, or why they do
   * not.
   */
  source: string;
  /**
   * Workers that measure GPU time (0: none can here, a cluster without GPUs: the view shows no GPU
   * time section).
   */
  measuring: number;
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
  /** Resources asked for by waiting tasks and offered by no worker: such tasks never run. */
  waiting: ResourceWait[];
  messages: string[];
  /** The room of a shared GPU server; None off a shared machine or while no lease counts. */
  room: RoomInfo | null;
  /** Where the GPU's time went per task prefix in the window; None without a cluster. */
  gpu_time: GpuTime | null;
}
