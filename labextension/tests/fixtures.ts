/** Frames for tests: small, valid, and easy to vary. */
import {
  VERSION,
  deviceValues,
  type DeviceInfo,
  type DeviceValues,
  type Frame,
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
    ...overrides
  };
}
