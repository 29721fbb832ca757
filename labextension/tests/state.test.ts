import { describe, expect, it } from 'vitest';
import {
  LIMITS,
  applyFrame,
  clearStopped,
  emptyState,
  frameProblem,
  markStopped,
  type ViewState
} from '../src/view/state';
import { assignLanes } from '../src/view/lanes';
import {
  DEFAULT_INTERVAL,
  FIELD,
  SAMPLE_FIELDS,
  VERSION,
  deviceValues,
  type Frame
} from '../src/view/frame';
import { T0, device, frame, gpuSample, task, worker } from './fixtures';

// The types and constants come from frame.generated.ts, which tests/cpu/test_schema.py keeps
// equal to what frame.py says: these tests check what the view builds on them.
describe('frame schema', () => {
  it('indexes sample values by field name', () => {
    expect(Object.keys(FIELD)).toEqual([...SAMPLE_FIELDS]);
    SAMPLE_FIELDS.forEach((name, index) => expect(FIELD[name]).toBe(index));
    const values = deviceValues({ memory_used: 5, pcie_rx: 7 });
    expect(values).toHaveLength(SAMPLE_FIELDS.length);
    expect(values[FIELD.memory_used]).toBe(5);
    expect(values[FIELD.pcie_rx]).toBe(7);
    expect(values[FIELD.utilization]).toBeNull();
  });

  it('has a version and defaults', () => {
    expect(Number.isInteger(VERSION)).toBe(true);
    expect(emptyState().interval).toBe(DEFAULT_INTERVAL);
  });
});

describe('applyFrame', () => {
  it('applies a snapshot, then deltas that append samples and tasks and replace the rest', () => {
    let state = applyFrame(
      emptyState(),
      frame({ samples: [gpuSample(T0 - 1, 10, 1)], tasks: [task(T0 - 2, T0 - 1)] })
    );
    expect(state.frames).toBe(1);
    expect(state.samples).toHaveLength(1);

    state = applyFrame(
      state,
      frame({
        kind: 'delta',
        time: T0 + 1,
        devices: [device('GPU-aaaa'), device('GPU-bbbb', { label: '1' })],
        samples: [gpuSample(T0, 20, 2), gpuSample(T0 + 1, 30, 3)],
        tasks: [task(T0, T0 + 1, { key: 'b' })],
        messages: ['hello'],
        cluster: null
      })
    );
    expect(state.frames).toBe(2);
    expect(state.time).toBe(T0 + 1);
    expect(state.samples.map(s => s.t)).toEqual([T0 - 1, T0, T0 + 1]);
    expect(state.tasks.map(t => t.key)).toEqual(["('sum-abc', 0)", 'b']);
    expect(state.devices.map(d => d.id)).toEqual(['GPU-aaaa', 'GPU-bbbb']);
    expect(state.messages).toEqual(['hello']);
    // the cluster is no longer named: kept, stopped, with its tasks and workers
    expect(state.cluster).toMatchObject({ state: 'stopped', stopped_at: T0 });
  });

  it('remembers the names of workers that left, for the lanes of their tasks', () => {
    const gone = 'tcp://127.0.0.1:41001';
    const now = 'tcp://127.0.0.1:42001';
    let state = applyFrame(
      emptyState(),
      frame({ workers: [worker(gone, '0')], tasks: [task(T0 - 2, T0 - 1, { worker: gone })] })
    );
    // a Restart: worker 0 is back at a new address; even a snapshot keeps the old name
    state = applyFrame(
      state,
      frame({
        time: T0 + 1,
        workers: [worker(now, '0')],
        tasks: [task(T0 - 2, T0 - 1, { worker: gone }), task(T0, T0 + 1, { worker: now })]
      })
    );
    expect(state.workerNames).toEqual({ [gone]: '0', [now]: '0' });
    const labels = assignLanes(state.tasks, state.workers, state.workerNames).map(l => l.label);
    expect(labels).toEqual(['worker 0', 'worker 0′']);
    // the names of workers whose tasks are gone are forgotten
    state = applyFrame(state, frame({ time: T0 + 2, workers: [worker(now, '0')], tasks: [] }));
    expect(state.workerNames).toEqual({});
  });

  it('replaces everything on a snapshot', () => {
    let state = applyFrame(emptyState(), frame({ samples: [gpuSample(T0, 10, 1)] }));
    state = applyFrame(state, frame({ time: T0 + 5, samples: [gpuSample(T0 + 5, 50, 5)] }));
    expect(state.samples.map(s => s.t)).toEqual([T0 + 5]);
  });

  it('does not change the state it is given', () => {
    const before = applyFrame(emptyState(), frame({ samples: [gpuSample(T0, 10, 1)] }));
    const copy = JSON.parse(JSON.stringify(before)) as ViewState;
    applyFrame(before, frame({ kind: 'delta', time: T0 + 1, samples: [gpuSample(T0 + 1, 1, 1)] }));
    expect(before).toEqual(copy);
  });

  it('prunes samples and tasks older than time - history', () => {
    let state = applyFrame(
      emptyState(),
      frame({
        history: 10,
        samples: [gpuSample(T0 - 20, 1, 1), gpuSample(T0 - 5, 2, 2), gpuSample(T0, 3, 3)],
        tasks: [
          task(T0 - 30, T0 - 11, { key: 'old' }),
          task(T0 - 15, T0 - 9, { key: 'straddles' }),
          task(T0 - 1, T0, { key: 'new' })
        ]
      })
    );
    expect(state.samples.map(s => s.t)).toEqual([T0 - 5, T0]);
    expect(state.tasks.map(t => t.key)).toEqual(['straddles', 'new']);

    // time moves on: what fell out of the window goes, even without new data
    state = applyFrame(state, frame({ kind: 'delta', history: 10, time: T0 + 8 }));
    expect(state.samples.map(s => s.t)).toEqual([T0]);
    expect(state.tasks.map(t => t.key)).toEqual(['new']);
  });

  it('caps samples and tasks, keeping the newest', () => {
    const limits = { maxSamples: 3, maxTasks: 2 };
    let state = emptyState();
    for (let i = 0; i < 10; i++) {
      state = applyFrame(
        state,
        frame({
          kind: i === 0 ? 'snapshot' : 'delta',
          time: T0 + i,
          samples: [gpuSample(T0 + i, i, i)],
          tasks: [task(T0 + i - 0.5, T0 + i, { key: `k${i}` })]
        }),
        limits
      );
    }
    expect(state.samples.map(s => s.t)).toEqual([T0 + 7, T0 + 8, T0 + 9]);
    expect(state.tasks.map(t => t.key)).toEqual(['k8', 'k9']);
  });

  it('has default caps that bound a view left open for hours', () => {
    expect(LIMITS).toEqual({ maxSamples: 20000, maxTasks: 50000 });
    const samples = Array.from({ length: 25000 }, (_, i) => gpuSample(T0 - 25000 + i + 1, 1, 1));
    const tasks = Array.from({ length: 60000 }, (_, i) => task(T0 - 1, T0, { key: `k${i}` }));
    const state = applyFrame(emptyState(), frame({ history: 3600 * 10, samples, tasks }));
    expect(state.samples).toHaveLength(20000);
    expect(state.samples[0].t).toBe(T0 - 20000 + 1);
    expect(state.tasks).toHaveLength(50000);
    expect(state.tasks[49999].key).toBe('k59999');
  });

  it('refuses a frame of another version with a message and keeps the data', () => {
    const good = applyFrame(emptyState(), frame({ samples: [gpuSample(T0, 10, 1)] }));
    const refused = applyFrame(good, { ...frame({ time: T0 + 1 }), version: VERSION + 1 });
    expect(refused.frames).toBe(1);
    expect(refused.samples).toEqual(good.samples);
    expect(refused.time).toBe(T0);
    expect(refused.errors).toHaveLength(1);
    expect(refused.errors[0]).toContain(`version ${VERSION + 1}`);
    expect(refused.errors[0]).toContain('does not know');
    expect(refused.errors[0]).toContain(`reads version ${VERSION}`);
    expect(refused.errors[0]).toMatch(/reinstall gpudask-jupyter and reload the page/);
    // the next good frame clears the message
    const again = applyFrame(refused, frame({ kind: 'delta', time: T0 + 2 }));
    expect(again.errors).toEqual([]);
    expect(again.frames).toBe(2);
  });

  it('says so in words when a frame has no version', () => {
    const unversioned: Partial<Frame> = frame();
    delete unversioned.version;
    expect(frameProblem(unversioned)).toMatch(/without a version number/);
    expect(frameProblem({ ...frame(), version: '1' })).toMatch(/without a version number/);
  });

  it('refuses what is not a frame', () => {
    expect(frameProblem(null)).toMatch(/not an object/);
    expect(frameProblem('frame')).toMatch(/not an object/);
    expect(frameProblem({ version: VERSION, kind: 'other', time: T0 })).toMatch(/kind/);
    expect(frameProblem({ version: VERSION, kind: 'delta' })).toMatch(/time/);
    expect(frameProblem(frame())).toBeNull();
    expect(applyFrame(emptyState(), undefined).frames).toBe(0);
  });
});

describe('assignLanes', () => {
  it('gives one lane per (worker, thread), ordered by worker name then thread', () => {
    const a = 'tcp://10.0.0.1:1';
    const b = 'tcp://10.0.0.2:1';
    const c = 'tcp://10.0.0.3:1';
    const workers = [worker(a, 'worker-10'), worker(b, 'worker-2')];
    const tasks = [
      task(0, 1, { worker: a, thread: 7 }),
      task(0, 1, { worker: b, thread: 900 }),
      task(0, 1, { worker: a, thread: 3 }),
      task(1, 2, { worker: a, thread: 7 }),
      task(0, 1, { worker: b, thread: 5 }),
      task(0, 1, { worker: c, thread: 1 }) // not in workers: it left, its address is its name
    ];
    const lanes = assignLanes(tasks, workers);
    // an address used as name (without its protocol) sorts before "worker-…"
    expect(lanes.map(l => [l.worker, l.thread])).toEqual([
      [c, 1],
      [b, 5],
      [b, 900],
      [a, 3],
      [a, 7]
    ]);
    expect(lanes.map(l => l.label)).toEqual([
      '10.0.0.3:1′',
      'worker-2 #1',
      'worker-2 #2',
      'worker-10 #1',
      'worker-10 #2'
    ]);
    // the order does not depend on the order of the tasks
    expect(assignLanes([...tasks].reverse(), workers)).toEqual(lanes);
  });
});

describe('a stopped cluster stays', () => {
  const running = () =>
    applyFrame(
      emptyState(),
      frame({
        tasks: [task(T0 - 2, T0 - 1)],
        progress: [
          {
            prefix: 'sum',
            total: 1,
            done: 1,
            processing: 0,
            erred: 0,
            running: 0,
            color: '#3f69d3'
          }
        ]
      })
    );

  it('keeps the work of a cluster the frames stop naming, marked stopped', () => {
    const state = applyFrame(
      running(),
      frame({ time: T0 + 1, cluster: null, workers: [], tasks: [] })
    );
    expect(state.cluster).toMatchObject({ state: 'stopped', stopped_at: T0, mode: 'gpu' });
    expect(state.tasks).toHaveLength(1);
    expect(state.workers).toHaveLength(1);
    expect(state.progress).toHaveLength(1);
    // still there long after the history would have dropped it
    const later = applyFrame(
      state,
      frame({ kind: 'delta', time: T0 + 10_000, cluster: null, workers: [] })
    );
    expect(later.tasks).toHaveLength(1);
    expect(later.cluster?.state).toBe('stopped');
  });

  it('shows what the kernel says about a stopped cluster, until cleared', () => {
    const stopped = {
      state: 'stopped' as const,
      mode: 'cpu',
      address: 'tcp://127.0.0.1:8786',
      dashboard: null,
      message: '',
      stopped_at: T0 + 1
    };
    let state = applyFrame(
      running(),
      frame({ time: T0 + 2, cluster: stopped, tasks: [task(T0 - 2, T0 - 1)] })
    );
    expect(state.cluster?.stopped_at).toBe(T0 + 1);
    state = clearStopped(state);
    expect(state.cluster).toBeNull();
    expect(state.tasks).toEqual([]);
    // the kernel goes on reporting it stopped: it stays cleared
    state = applyFrame(
      state,
      frame({ time: T0 + 3, cluster: stopped, tasks: [task(T0 - 2, T0 - 1)] })
    );
    expect(state.cluster).toBeNull();
    expect(state.tasks).toEqual([]);
    state = applyFrame(state, frame({ time: T0 + 4, cluster: null }));
    expect(state.cluster).toBeNull();
    // a new cluster starts: shown, and the clearing is over
    state = applyFrame(state, frame({ time: T0 + 5 }));
    expect(state.cluster?.state).toBe('running');
    expect(state.cleared).toBeNull();
  });

  it('marks the cluster stopped when its kernel goes, with nothing left running', () => {
    const busy = applyFrame(
      emptyState(),
      frame({
        progress: [
          {
            prefix: 'sum',
            total: 8,
            done: 1,
            processing: 6,
            erred: 0,
            running: 4,
            color: '#3f69d3'
          }
        ]
      })
    );
    expect(busy.workers.some(w => w.executing > 0)).toBe(true);
    const dead = markStopped(busy, T0 + 7);
    expect(dead.workers.map(w => w.executing)).toEqual(busy.workers.map(() => 0));
    expect(dead.progress).toEqual([
      { prefix: 'sum', total: 8, done: 1, processing: 0, erred: 0, running: 0, color: '#3f69d3' }
    ]);
    const state = markStopped(running(), T0 + 7);
    expect(state.cluster).toMatchObject({ state: 'stopped', stopped_at: T0 + 7 });
    expect(markStopped(state, T0 + 9).cluster?.stopped_at).toBe(T0 + 7);
    expect(clearStopped(running())).toEqual(running()); // a running cluster is not cleared
  });

  it("records the cluster's share of device memory over time", () => {
    let state = applyFrame(
      emptyState(),
      frame({ devices: [device('GPU-aaaa', { cluster_memory: 5 })] })
    );
    state = applyFrame(
      state,
      frame({ kind: 'delta', time: T0 + 1, devices: [device('GPU-aaaa', { cluster_memory: 7 })] })
    );
    state = applyFrame(
      state,
      frame({ kind: 'delta', time: T0 + 2, devices: [device('GPU-aaaa')] })
    );
    expect(state.clusterMemory).toEqual([
      { t: T0, bytes: { 'GPU-aaaa': 5 } },
      { t: T0 + 1, bytes: { 'GPU-aaaa': 7 } }
    ]);
  });
});
