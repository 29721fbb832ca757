// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GpuDaskView } from '../src/view/render';
import { drawn } from './canvas-stub';
import { T0, device, frame, gpuSample, task, worker } from './fixtures';

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
        progress: [{ prefix: EVIL, total: 4, done: 1, processing: 2, erred: 1 }],
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
      'tasks',
      'legend',
      'progress',
      'workers',
      'messages',
      'controls'
    ]) {
      expect(node.querySelector(`.gpudask-${name}`), name).not.toBeNull();
    }
  });

  it('draws tasks at their colour, errored ones black', () => {
    const view = new GpuDaskView(container);
    view.update(
      frame({
        tasks: [
          task(T0 - 3, T0 - 2, { color: '#ff0000' }),
          task(T0 - 2, T0 - 1, { color: '#00ff00', error: true }),
          task(T0 - 2, T0 - 1, { color: 'url(javascript:alert(1))' })
        ]
      })
    );
    view.flush();
    const canvas = view.root.querySelector<HTMLCanvasElement>('canvas.gpudask-tasks')!;
    expect(drawn.get(canvas)?.rects.map(r => r.fill)).toEqual(['#ff0000', '#000000', '#888888']);
  });

  it('puts the GPU history and the task stream on the same time axis', () => {
    const view = new GpuDaskView(container, { controls: { history: 300 } });
    view.update(
      frame({
        samples: [gpuSample(T0 - 100, 50, 2 ** 30), gpuSample(T0, 60, 2 ** 30)],
        tasks: [task(T0 - 100, T0 - 50)]
      })
    );
    view.flush();
    const history = view.root.querySelector<HTMLCanvasElement>('canvas.gpudask-history')!;
    const tasks = view.root.querySelector<HTMLCanvasElement>('canvas.gpudask-tasks')!;
    const rect = drawn.get(tasks)!.rects[0];
    const line = drawn.get(history)!.lines.at(-1)!; // utilisation, drawn last
    expect(line.points[0][0]).toBeCloseTo(rect.x);
    expect(line.points[1][0]).toBeCloseTo(600); // now: the right edge, width 600 before layout
    expect(rect.x).toBeCloseTo(400); // 200 s into a 300 s window of 600 px
    expect(rect.w).toBeCloseTo(100);
    // same column of the same grid: the same left offset and width on the page
    expect(history.parentElement?.className).toBe('gpudask-plot');
    expect(tasks.parentElement?.className).toBe('gpudask-plot');
    expect(history.width).toBe(tasks.width);
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
        }
      })
    );
    const text = root(view).querySelector('.gpudask-messages')?.textContent;
    expect(text).toContain('No GPU data: NVML library not found');
    expect(text).toContain('Cannot reach the scheduler at tcp://10.0.0.9:8786: connection refused');

    view.update(frame({ cluster: null }));
    expect(root(view).querySelector('.gpudask-messages')?.textContent).toContain('No Dask cluster');
    view.setHostMessages(['No notebook in focus.']);
    expect(root(view).querySelector('.gpudask-messages')?.textContent).toContain(
      'No notebook in focus.'
    );
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
    const onControl = vi.fn();
    const view = new GpuDaskView(container, { onControl });
    const listeners = listen.mock.calls.map(call => call[2] as AddEventListenerOptions);
    expect(listeners.length).toBeGreaterThanOrEqual(4); // the controls
    expect(listeners.every(options => options?.signal?.aborted === false)).toBe(true);
    const pause = view.root.querySelector<HTMLButtonElement>('.gpudask-pause')!;
    pause.click();
    expect(onControl).toHaveBeenCalledTimes(1);

    view.update(frame()); // leaves a paint pending
    view.dispose();
    expect(cancel).toHaveBeenCalled();
    expect(observers).toHaveLength(1);
    expect(observers[0].disconnected).toBe(true);
    expect(container.querySelector('.gpudask-view')).toBeNull();
    // every listener was added with the view's signal, now aborted: all of them are removed
    expect(listeners.every(options => options?.signal?.aborted === true)).toBe(true);

    pause.click();
    expect(onControl).toHaveBeenCalledTimes(1);
    expect(view.update(frame({ time: T0 + 1 }))).toBe(false);
    expect(view.viewState.frames).toBe(1);
  });
});
