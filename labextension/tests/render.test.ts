// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GpuDaskView } from '../src/view/render';
import { NO_GPU_DATA } from '../src/view/messages';
import { NO_TASKS } from '../src/view/taskchart';
import { drawn } from './canvas-stub';
import { T0, device, frame, gpuSample, task, worker } from './fixtures';
import { followRange } from '../src/view/timewindow';

const EVIL = '<img src=x onerror=alert(1)>';

let container: HTMLElement;

beforeEach(() => {
  container = document.createElement('div');
  document.body.append(container);
});

afterEach(() => {
  document.body.replaceChildren();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

function root(view: GpuDaskView): HTMLElement {
  view.flush();
  return view.root;
}

describe('GpuDaskView', () => {
  it('shows user strings as text, never as HTML', () => {
    const view = new GpuDaskView(container);
    view.update(
      frame({
        devices: [device('GPU-aaaa', { name: EVIL })],
        workers: [worker('tcp://127.0.0.1:40001', EVIL)],
        samples: [gpuSample(T0, 50, 2 ** 30)],
        tasks: [task(T0 - 2, T0 - 1, { key: EVIL, prefix: EVIL })],
        progress: [
          { prefix: EVIL, total: 4, done: 1, processing: 2, erred: 1, running: 1, color: '#3f69d3' }
        ],
        messages: [EVIL]
      })
    );
    const node = root(view);
    expect(document.querySelectorAll('img')).toHaveLength(0);
    expect(node.querySelector('.gpudask-devices')?.textContent).toContain(EVIL);
    expect(node.querySelector('.gpudask-legend')?.textContent).toContain(EVIL);
    expect(node.querySelector('.gpudask-workers')?.textContent).toContain(EVIL);
    expect(node.querySelector('.gpudask-progress')?.textContent).toContain(EVIL);
    expect(node.querySelector('.gpudask-messages')?.textContent).toContain(EVIL);
  });

  it('reports what it drew in data attributes', () => {
    const view = new GpuDaskView(container);
    expect(root(view).dataset.state).toBe('empty');
    expect(root(view).dataset.frames).toBe('0');
    const a = 'tcp://127.0.0.1:40001';
    view.update(
      frame({
        devices: [device('GPU-aaaa'), device('GPU-bbbb', { label: '1' })],
        tasks: [
          task(T0 - 3, T0 - 2, { worker: a, thread: 1 }),
          task(T0 - 2, T0 - 1, { worker: a, thread: 2 }),
          task(T0 - 2, T0 - 1, { worker: a, thread: 1 }),
          task(T0 - 1000, T0 - 999, { worker: a, thread: 3 }) // pruned: older than history
        ]
      })
    );
    const node = root(view);
    expect(node.dataset.devices).toBe('2');
    expect(node.dataset.taskRects).toBe('3');
    expect(node.dataset.lanes).toBe('2');
    expect(node.dataset.frames).toBe('1');
    expect(node.dataset.state).toBe('live');
    expect(node.querySelectorAll('.gpudask-device')).toHaveLength(2);
    for (const name of [
      'devices',
      'gpu-charts',
      'stream',
      'legend',
      'recent',
      'cluster',
      'actionbar',
      'windowbar',
      'progress',
      'workers',
      'messages',
      'controls'
    ]) {
      expect(node.querySelector(`.gpudask-${name}`), name).not.toBeNull();
    }
  });

  it('draws tasks at their colour, errored ones black', async () => {
    const view = new GpuDaskView(container);
    view.update(
      frame({
        tasks: [
          task(T0 - 3, T0 - 2, { color: '#ff0000', prefix: 'red' }),
          task(T0 - 2, T0 - 1, { color: '#00ff00', error: true }),
          task(T0 - 2, T0 - 1, { color: 'url(javascript:alert(1))', prefix: 'bad' })
        ]
      })
    );
    view.flush();
    await Promise.resolve(); // uPlot draws in a microtask
    const canvas = view.root.querySelector<HTMLCanvasElement>('.gpudask-stream canvas')!;
    expect(drawn.get(canvas)?.rects.map(r => r.fill)).toEqual(['#ff0000', '#000000', '#888888']);
  });

  it('puts the GPU charts and the task stream on one time axis', async () => {
    const view = new GpuDaskView(container);
    view.update(
      frame({
        devices: [device('GPU-aaaa'), device('GPU-bbbb', { label: '1' })],
        samples: [gpuSample(T0 - 5, 50, 2 ** 30), gpuSample(T0, 60, 2 ** 30)],
        tasks: [task(T0 - 4, T0 - 2)]
      })
    );
    view.flush();
    await Promise.resolve();
    const charts = [...view.root.querySelectorAll<HTMLElement>('.uplot')];
    expect(charts).toHaveLength(3); // utilisation, memory, tasks
    const boxes = charts.map(c => `${c.dataset.plotLeft}/${c.dataset.plotWidth}`);
    expect(new Set(boxes).size).toBe(1);
    expect(view.root.dataset.gpuLines).toBe('2');
    // the task rectangle sits where its times are on that axis: 1 s after the window's start
    const rect = drawn.get(view.root.querySelector<HTMLCanvasElement>('.gpudask-stream canvas')!)!
      .rects[0];
    const left = Number(charts[2].dataset.plotLeft);
    const width = Number(charts[2].dataset.plotWidth);
    const range = followRange(T0, [task(T0 - 4, T0 - 2)], 300);
    const expected = left + ((T0 - 4 - range.start) / (range.end - range.start)) * width;
    expect(rect.x).toBeCloseTo(expected, 0);
    expect(view.root.querySelector('.gpudask-window-text')?.textContent).toContain('Following');
  });

  it('says why there is nothing to draw', () => {
    const view = new GpuDaskView(container);
    view.update(
      frame({
        nvml: { available: false, reason: 'NVML library not found', driver: null },
        devices: [],
        cluster: {
          state: 'unreachable',
          mode: 'attached',
          address: 'tcp://10.0.0.9:8786',
          dashboard: null,
          message: 'connection refused',
          stopped_at: null
        },
        waiting: [{ resource: 'GPU', tasks: 3 }]
      })
    );
    const text = root(view).textContent;
    // one short line, the reason a click away
    const note = root(view).querySelector<HTMLElement>('.gpudask-messages .gpudask-warn')!;
    expect(note.firstChild?.nextSibling?.textContent).toBe(NO_GPU_DATA);
    const why = note.querySelector('details')!;
    expect(why.open).toBe(false);
    expect(why.querySelector('summary')?.textContent).toBe('Why?');
    expect(why.textContent).toContain('NVML library not found');
    // no GPU, no box to list GPU processes
    expect(
      root(view).querySelector<HTMLElement>('.gpudask-show-processes')!.closest('label')!.hidden
    ).toBe(true);
    expect(text).toContain('Cannot reach the scheduler at tcp://10.0.0.9:8786: connection refused');
    expect(text).toContain('3 tasks wait for the resource "GPU", which no worker offers');

    // a new cluster that ran nothing yet: a sentence in place of empty axes
    const idle = new GpuDaskView(container);
    idle.update(frame());
    const empty = root(idle).querySelector<HTMLElement>('.gpudask-stream-empty')!;
    expect(empty.hidden).toBe(false);
    expect(empty.textContent).toBe(NO_TASKS);
    expect(
      root(idle).querySelector<HTMLElement>('.gpudask-stream .gpudask-chart-plot')!.hidden
    ).toBe(true);
    expect(
      root(idle).querySelector<HTMLElement>('.gpudask-show-processes')!.closest('label')!.hidden
    ).toBe(false);

    const fresh = new GpuDaskView(container);
    fresh.update(frame({ cluster: null }));
    expect(root(fresh).querySelector('.gpudask-cluster')?.textContent).toContain('No Dask cluster');
    fresh.setHostMessages(['No notebook in focus.']);
    expect(root(fresh).querySelector('.gpudask-messages')?.textContent).toContain(
      'No notebook in focus.'
    );
  });

  it('links the dashboard in a new tab, and only http(s) addresses', () => {
    const view = new GpuDaskView(container);
    const cluster = frame().cluster!;
    view.update(frame({ cluster: { ...cluster, dashboard: 'http://127.0.0.1:8787/status' } }));
    const link = root(view).querySelector<HTMLAnchorElement>('a.gpudask-dashboard')!;
    expect(link.hidden).toBe(false);
    expect(link.href).toBe('http://127.0.0.1:8787/status');
    expect(link.target).toBe('_blank');
    expect(link.rel).toContain('noopener');
    view.update(frame({ cluster: { ...cluster, dashboard: 'javascript:alert(1)' } }));
    expect(root(view).querySelector<HTMLAnchorElement>('a.gpudask-dashboard')!.hidden).toBe(true);
    expect(root(view).querySelector('a.gpudask-dashboard')!.hasAttribute('href')).toBe(false);
    view.update(frame({ cluster: { ...cluster, dashboard: null } }));
    expect(root(view).querySelector<HTMLAnchorElement>('a.gpudask-dashboard')!.hidden).toBe(true);
  });

  it('keeps a stopped cluster greyed with its time, until cleared', () => {
    const view = new GpuDaskView(container);
    view.update(frame({ tasks: [task(T0 - 2, T0 - 1)] }));
    view.update(frame({ time: T0 + 1, cluster: null, workers: [] }));
    const node = root(view);
    expect(node.classList.contains('gpudask-stopped')).toBe(true);
    expect(node.querySelector('.gpudask-cluster-text')?.textContent).toMatch(
      /^Cluster stopped at \d\d:\d\d:\d\d/
    );
    expect(node.dataset.taskRects).toBe('1');
    const clear = node.querySelector<HTMLButtonElement>('.gpudask-clear')!;
    expect(clear.hidden).toBe(false);
    clear.click();
    expect(root(view).classList.contains('gpudask-stopped')).toBe(false);
    expect(root(view).dataset.taskRects).toBe('0');
    expect(root(view).querySelector('.gpudask-cluster-text')?.textContent).toContain(
      'No Dask cluster'
    );
  });

  it('switches to the compact layout in a narrow sidebar', () => {
    const view = new GpuDaskView(container);
    view.update(frame({ workers: [worker('tcp://a:1', '0'), worker('tcp://a:2', '1')] }));
    expect(root(view).dataset.layout).toBe('wide');
    Object.defineProperty(view.root, 'clientWidth', { configurable: true, value: 250 });
    view.setHostMessages([]);
    expect(root(view).dataset.layout).toBe('compact');
    expect(view.root.classList.contains('gpudask-compact')).toBe(true);
    expect(view.root.querySelectorAll('.gpudask-worker-card')).toHaveLength(2);
  });

  it('shows a refused frame version in words', () => {
    const view = new GpuDaskView(container);
    view.update({ ...frame(), version: 99 });
    expect(root(view).querySelector('.gpudask-messages')?.textContent).toContain('version 99');
    expect(root(view).dataset.frames).toBe('0');
  });

  it('shows GPU processes only when asked', () => {
    const processes = { own: [{ device: 'GPU-aaaa', pid: 4242, memory: 2 ** 30 }], others: 3 };
    const view = new GpuDaskView(container);
    view.update(frame({ processes }));
    const section = () => root(view).querySelector<HTMLElement>('.gpudask-processes')!;
    expect(section().hidden).toBe(true);
    view.setControls({ processes: true });
    expect(section().hidden).toBe(false);
    expect(section().textContent).toContain('pid 4242 on GPU 0: 1 GiB');
    expect(section().textContent).toContain('3 processes of other users');

    view.update(
      frame({
        processes: null,
        nvml: { available: false, reason: 'no NVIDIA driver on this machine', driver: null }
      })
    );
    expect(section().textContent).toBe(
      'GPU processes: none to list. no NVIDIA driver on this machine'
    );
  });

  it('keeps the picture and ignores frames while paused', () => {
    const view = new GpuDaskView(container);
    view.update(frame({ samples: [gpuSample(T0, 10, 1)] }));
    view.setControls({ paused: true });
    expect(view.update(frame({ time: T0 + 1, devices: [] }))).toBe(false);
    const node = root(view);
    expect(node.dataset.state).toBe('paused');
    expect(node.dataset.frames).toBe('1');
    expect(node.dataset.devices).toBe('1');
    view.setControls({ paused: false });
    expect(view.update(frame({ time: T0 + 2 }))).toBe(true);
    expect(root(view).dataset.state).toBe('live');
  });

  it('paints once per animation frame however many frames arrive', () => {
    const raf = vi.spyOn(window, 'requestAnimationFrame');
    const view = new GpuDaskView(container);
    for (let i = 0; i < 5; i++) {
      view.update(frame({ kind: i ? 'delta' : 'snapshot', time: T0 + i }));
    }
    expect(raf).toHaveBeenCalledTimes(1);
    view.flush();
    expect(view.root.dataset.frames).toBe('5');
  });

  it('cleans up after itself on dispose', () => {
    const observers: { disconnected: boolean }[] = [];
    vi.stubGlobal(
      'ResizeObserver',
      class {
        disconnected = false;
        constructor() {
          observers.push(this);
        }
        observe(): void {}
        disconnect(): void {
          this.disconnected = true;
        }
      }
    );
    const cancel = vi.spyOn(window, 'cancelAnimationFrame');
    const listen = vi.spyOn(EventTarget.prototype, 'addEventListener');
    const unlisten = vi.spyOn(EventTarget.prototype, 'removeEventListener');
    const onControl = vi.fn();
    const view = new GpuDaskView(container, { onControl });
    view.update(frame({ samples: [gpuSample(T0, 1, 1)], tasks: [task(T0 - 1, T0)] }));
    view.flush(); // the charts exist now
    const ours = listen.mock.calls.filter(
      call => (call[2] as AddEventListenerOptions | undefined)?.signal !== undefined
    );
    expect(ours.length).toBeGreaterThanOrEqual(8); // the controls, the actions, the charts' wheels
    const pause = view.root.querySelector<HTMLButtonElement>('.gpudask-pause')!;
    pause.click();
    expect(onControl).toHaveBeenCalledTimes(1);

    view.update(frame({ time: T0 + 1 })); // leaves a paint pending
    const windowListeners = listen.mock.contexts.filter(c => c === window).length;
    view.dispose();
    expect(cancel).toHaveBeenCalled();
    expect(observers).toHaveLength(1);
    expect(observers[0].disconnected).toBe(true);
    expect(container.querySelector('.gpudask-view')).toBeNull();
    // our listeners go with the signal; uPlot's window listeners with its destroy()
    expect(ours.every(call => (call[2] as AddEventListenerOptions).signal?.aborted)).toBe(true);
    expect(unlisten.mock.contexts.filter(c => c === window).length).toBeGreaterThanOrEqual(
      Math.min(1, windowListeners)
    );

    pause.click();
    expect(onControl).toHaveBeenCalledTimes(1);
    expect(view.update(frame({ time: T0 + 2 }))).toBe(false);
    expect(view.viewState.frames).toBe(2);
  });
});
