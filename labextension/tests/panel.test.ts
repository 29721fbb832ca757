// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import type { Kernel } from '@jupyterlab/services';
import type { Focus } from '../src/lab/focus';
import { GpuDaskPanel, KERNEL_SHUT_DOWN, NO_AREA, NO_NOTEBOOK } from '../src/lab/panel';
import { FakeKernel, iopub } from './fakekernel';
import type { FrameResponse } from '../src/lab/poller';
import { frame } from './fixtures';
import { fakeTimers } from './timers';
import { CONTROL_MODULE } from '../src/view/protocol.generated';

class FakeFocus implements Focus {
  readonly changed = new Signal<this, void>(this);
  hasNotebook = true;
  notebookId = 'nb-1';
  kernel: Kernel.IKernelConnection | null = null;
  constructor(public kernelId = 'kernel-1') {}
  focus(kernelId: string, hasNotebook = true, notebookId = this.notebookId): void {
    this.kernelId = kernelId;
    this.hasNotebook = hasNotebook;
    this.notebookId = hasNotebook ? notebookId : '';
    this.changed.emit();
  }
}

interface Request {
  kernel: string;
  cursor: string;
}

function setup() {
  const focus = new FakeFocus();
  const requests: Request[] = [];
  let failWith: string | null = null;
  const fetchFrame = vi.fn(async (kernel: string, cursor: string): Promise<FrameResponse> => {
    requests.push({ kernel, cursor });
    if (failWith) {
      throw new Error(failWith);
    }
    return {
      frame: frame({ kind: cursor ? 'delta' : 'snapshot' }),
      cursor: `${kernel}:${requests.length}`
    };
  });
  const openPanel = vi.fn();
  const panel = new GpuDaskPanel({ focus, fetchFrame, openPanel });
  const view = () => panel.node.querySelector<HTMLElement>('.gpudask-view')!;
  const messages = () => {
    requestAnimationFrameFlush();
    return view().querySelector('.gpudask-messages')!.textContent ?? '';
  };
  return {
    focus,
    panel,
    requests,
    openPanel,
    view,
    messages,
    fail: (message: string | null) => {
      failWith = message;
    }
  };
}

// paints are coalesced into animation frames: run the pending one now
function requestAnimationFrameFlush(): void {
  vi.advanceTimersByTime(20);
}

beforeEach(fakeTimers);
afterEach(() => {
  vi.useRealTimers();
  document.body.replaceChildren();
});

describe('GpuDaskPanel', () => {
  it('polls only while visible', async () => {
    const { panel, requests } = setup();
    await vi.advanceTimersByTimeAsync(5000);
    expect(requests).toHaveLength(0); // not attached

    Widget.attach(panel, document.body);
    await vi.advanceTimersByTimeAsync(0);
    expect(requests).toEqual([{ kernel: 'kernel-1', cursor: '' }]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(requests[1]).toEqual({ kernel: 'kernel-1', cursor: 'kernel-1:1' });

    panel.hide();
    await vi.advanceTimersByTimeAsync(5000);
    expect(requests).toHaveLength(2);

    panel.show();
    await vi.advanceTimersByTimeAsync(0);
    expect(requests).toHaveLength(3);

    Widget.detach(panel);
    await vi.advanceTimersByTimeAsync(5000);
    expect(requests).toHaveLength(3);
    panel.dispose();
  });

  it('starts over when another notebook gets the focus', async () => {
    const { panel, focus, requests, view } = setup();
    Widget.attach(panel, document.body);
    await vi.advanceTimersByTimeAsync(1000);
    expect(requests.at(-1)?.cursor).not.toBe('');

    focus.focus('kernel-2', true, 'nb-2');
    await vi.advanceTimersByTimeAsync(0);
    expect(requests.at(-1)).toEqual({ kernel: 'kernel-2', cursor: '' });
    requestAnimationFrameFlush();
    expect(view().dataset.frames).toBe('1'); // reset, then the new snapshot
    panel.dispose();
  });

  it('says why there is nothing to draw, and keeps polling after failures', async () => {
    const { panel, focus, requests, messages, fail } = setup();
    Widget.attach(panel, document.body);
    focus.focus('', false);
    await vi.advanceTimersByTimeAsync(0);
    expect(requests.at(-1)).toEqual({ kernel: '', cursor: '' });
    expect(messages()).toContain(NO_NOTEBOOK);

    fail('The gpudask-jupyter server extension is not enabled');
    await vi.advanceTimersByTimeAsync(1000);
    expect(messages()).toContain('server extension is not enabled');
    const count = requests.length;
    await vi.advanceTimersByTimeAsync(1000);
    expect(requests.length).toBe(count + 1);

    fail(null);
    await vi.advanceTimersByTimeAsync(1000);
    expect(messages()).not.toContain('server extension');
    panel.dispose();
  });

  it('runs Start in the focused kernel and shows its progress and result', async () => {
    const { panel, focus, view } = setup();
    Widget.attach(panel, document.body);
    const start = () => panel.node.querySelector<HTMLButtonElement>('.gpudask-start')!;
    focus.kernel = null;
    focus.focus('', true);
    requestAnimationFrameFlush();
    expect(start().disabled).toBe(true);

    const kernel = new FakeKernel('kernel-3');
    let open = (): void => undefined;
    kernel.script = {
      gate: new Promise<void>(resolve => (open = resolve)),
      messages: [
        iopub('status', { execution_state: 'busy' }),
        iopub('stream', { name: 'stdout', text: 'Starting…\n' }),
        iopub('stream', {
          name: 'stdout',
          text:
            'GPUDASK_CONTROL_RESULT {"ok": true, "action": "start", "text": "Started a CPU cluster <b>.", ' +
            '"cluster": {"state": "running", "mode": "cpu", "address": "tcp://127.0.0.1:1", "workers": 2, "dashboard": null}}\n'
        })
      ],
      reply: { status: 'ok' }
    };
    focus.kernel = kernel.connection;
    focus.focus('kernel-3');
    requestAnimationFrameFlush();
    expect(start().disabled).toBe(false);
    start().click();
    expect(kernel.requests[0]).toEqual({
      code: `import ${CONTROL_MODULE} as _gdc; _gdc.run_json("start", None)`,
      silent: false,
      store_history: false
    });
    await vi.advanceTimersByTimeAsync(1500);
    const status = () => view().querySelector('.gpudask-action-status')!;
    expect(status().textContent).toContain('Starting a cluster… 1 s: waiting for the cell');
    open();
    await vi.advanceTimersByTimeAsync(20);
    expect(status().textContent).toBe(
      'Start: done.Started a CPU cluster <b>.Cluster: running (cpu), 2 workers, tcp://127.0.0.1:1'
    );
    expect(status().querySelector('b')).toBeNull();
    panel.dispose();
  });

  it('shows a Python error of an action in words', async () => {
    const { panel, focus, view } = setup();
    const kernel = new FakeKernel('kernel-3');
    kernel.script = {
      messages: [
        iopub('error', {
          ename: 'ModuleNotFoundError',
          evalue: `No module named '${CONTROL_MODULE}'`,
          traceback: []
        })
      ],
      reply: { status: 'error', ename: 'ModuleNotFoundError', evalue: '' }
    };
    focus.kernel = kernel.connection;
    focus.focus('kernel-3');
    Widget.attach(panel, document.body);
    requestAnimationFrameFlush();
    panel.node.querySelector<HTMLButtonElement>('.gpudask-start')!.click();
    await vi.advanceTimersByTimeAsync(20);
    const text = view().querySelector('.gpudask-action-status')!.textContent;
    expect(text).toContain('Start failed.');
    expect(text).toContain('has no panel actions');
    panel.dispose();
  });

  it('says at once that the kernel restarted, and keeps its last work greyed', async () => {
    const { panel, focus, view, requests } = setup();
    const kernel = new FakeKernel('kernel-1');
    focus.kernel = kernel.connection;
    focus.focus('kernel-1');
    Widget.attach(panel, document.body);
    await vi.advanceTimersByTimeAsync(0);
    requestAnimationFrameFlush();
    expect(view().dataset.liveness).toBe('live');

    kernel.setStatus('restarting');
    requestAnimationFrameFlush();
    expect(view().dataset.liveness).toBe('gone');
    expect(view().querySelector('.gpudask-messages')!.textContent).toContain(
      'The kernel is restarting'
    );
    expect(view().classList.contains('gpudask-stopped')).toBe(true);

    kernel.setStatus('starting');
    kernel.setStatus('idle');
    await vi.advanceTimersByTimeAsync(0);
    requestAnimationFrameFlush();
    expect(view().dataset.liveness).toBe('live');
    expect(requests.at(-1)?.cursor).toBe(''); // a fresh snapshot of the new kernel
    panel.dispose();
  });

  it('keeps the last work of a notebook whose kernel shut down', async () => {
    const { panel, focus, view } = setup();
    Widget.attach(panel, document.body);
    await vi.advanceTimersByTimeAsync(0);
    requestAnimationFrameFlush();
    focus.kernel = null;
    focus.focus(''); // the same notebook, its kernel gone
    requestAnimationFrameFlush();
    expect(view().dataset.liveness).toBe('gone');
    expect(view().querySelector('.gpudask-messages')!.textContent).toContain(KERNEL_SHUT_DOWN);
    expect(view().dataset.frames).toBe('1');
    expect(view().classList.contains('gpudask-stopped')).toBe(true);
    panel.dispose();
  });

  it('says so when the application has no area for a panel', async () => {
    const focus = new FakeFocus();
    const panel = new GpuDaskPanel({
      focus,
      fetchFrame: async () => ({ frame: frame(), cursor: 'c' }),
      openPanel: () => false
    });
    Widget.attach(panel, document.body);
    panel.node.querySelector<HTMLButtonElement>('.gpudask-open')!.click();
    await vi.advanceTimersByTimeAsync(0);
    requestAnimationFrameFlush();
    expect(panel.node.querySelector('.gpudask-messages')!.textContent).toContain(NO_AREA);
    panel.dispose();
  });

  it('opens the main-area panel from its button and stops on dispose', async () => {
    const { panel, openPanel, requests } = setup();
    Widget.attach(panel, document.body);
    panel.node.querySelector<HTMLButtonElement>('.gpudask-open')!.click();
    expect(openPanel).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(0);
    const count = requests.length;
    panel.dispose();
    await vi.advanceTimersByTimeAsync(5000);
    expect(requests.length).toBe(count);
    expect(document.querySelector('.gpudask-view')).toBeNull();
  });
});
