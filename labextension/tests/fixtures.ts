/** Frames for tests: small, valid, and easy to vary. */
import {
  VERSION,
  deviceValues,
  type DeviceInfo,
  type DeviceValues,
  type Frame,
  type RoomGpu,
  type RoomHolder,
  type RoomInfo,
  type Sample,
  type TaskRect,
  type WorkerInfo
} from '../src/view/frame';

export const T0 = 1_700_000_000;

export function device(id = 'GPU-aaaa', overrides: Partial<DeviceInfo> = {}): DeviceInfo {
  return {
    id,
    label: '0',
    name: 'NVIDIA H200',
    host: '',
    mig: false,
    memory_total: 140 * 2 ** 30,
    power_limit: 700,
    cluster_memory: null,
    ...overrides
  };
}

export function sample(t: number, values: Record<string, DeviceValues> = {}): Sample {
  return { t, values };
}

/** A sample of one device: utilisation %, memory used bytes, 50 °C, 300 W (PCIe: null). */
export function gpuSample(t: number, util: number, memory: number, id = 'GPU-aaaa'): Sample {
  const values = deviceValues({
    utilization: util,
    memory_used: memory,
    temperature: 50,
    power: 300
  });
  return sample(t, { [id]: values });
}

export function task(start: number, stop: number, overrides: Partial<TaskRect> = {}): TaskRect {
  return {
    worker: 'tcp://127.0.0.1:40001',
    thread: 1,
    start,
    stop,
    action: 'compute',
    key: "('sum-abc', 0)",
    prefix: 'sum',
    color: '#1f77b4',
    error: false,
    ...overrides
  };
}

export function worker(
  address: string,
  name: string,
  overrides: Partial<WorkerInfo> = {}
): WorkerInfo {
  return {
    address,
    name,
    host: '127.0.0.1',
    nthreads: 2,
    memory: 2 ** 30,
    memory_limit: 8 * 2 ** 30,
    executing: 1,
    ready: 0,
    in_memory: 3,
    gpu: null,
    ours: true,
    ...overrides
  };
}

export function frame(overrides: Partial<Frame> = {}): Frame {
  return {
    version: VERSION,
    kind: 'snapshot',
    time: T0,
    interval: 1,
    history: 300,
    nvml: { available: true, reason: '', driver: '570.00' },
    devices: [device()],
    samples: [],
    cluster: {
      state: 'running',
      mode: 'gpu',
      address: 'tcp://127.0.0.1:8786',
      dashboard: null,
      message: '',
      stopped_at: null
    },
    workers: [worker('tcp://127.0.0.1:40001', 'worker-0')],
    tasks: [],
    progress: [],
    processes: null,
    waiting: [],
    messages: [],
    room: null,
    gpu_time: null,
    ...overrides
  };
}

export const GiB = 2 ** 30;

/** A holder the viewer sees: by default the viewer's own lease, 4 GiB, working a minute ago. */
export function roomHolder(overrides: Partial<RoomHolder> = {}): RoomHolder {
  return {
    who: 'you',
    you: true,
    share: 4 * GiB,
    relied_on: null,
    used: GiB,
    utilization: null,
    last_work: T0 - 60,
    above: false,
    idle: false,
    ...overrides
  };
}

/** A GPU of the room: by default GPU-aaaa (the device of `frame()`), 16 GiB, the viewer alone. */
export function roomGpu(overrides: Partial<RoomGpu> = {}): RoomGpu {
  return {
    id: 'GPU-aaaa',
    label: '0',
    name: 'NVIDIA H200',
    memory_total: 16 * GiB,
    memory_used: 2 * GiB,
    utilization: 30,
    holders: 1,
    not_promised: 11 * GiB,
    shown: [roomHolder()],
    others: 0,
    others_idle: 0,
    others_above: 0,
    ...overrides
  };
}

export function room(gpus: RoomGpu[] = [roomGpu()], overrides: Partial<RoomInfo> = {}): RoomInfo {
  return { gpus, names: false, idle_after: 600, ...overrides };
}
