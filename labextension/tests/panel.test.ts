// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import type { Kernel } from '@jupyterlab/services';
import type { Focus } from '../src/lab/focus';
import { GpuDaskPanel, NO_NOTEBOOK } from '../src/lab/panel';
import type { FrameResponse } from '../src/lab/poller';
import { frame } from './fixtures';

class FakeFocus implements Focus {
  readonly changed = new Signal<this, void>(this);
  hasNotebook = true;
  kernel: Kernel.IKernelConnection | null = null;
  constructor(public kernelId = 'kernel-1') {}
  focus(kernelId: string, hasNotebook = true): void {
    this.kernelId = kernelId;
    this.hasNotebook = hasNotebook;
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

beforeEach(() =>
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'requestAnimationFrame', 'cancelAnimationFrame']
  })
);
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

  it('starts over when another kernel gets the focus', async () => {
    const { panel, focus, requests, view } = setup();
    Widget.attach(panel, document.body);
    await vi.advanceTimersByTimeAsync(1000);
    expect(requests.at(-1)?.cursor).not.toBe('');

    focus.focus('kernel-2');
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

  it('starts a cluster in the focused kernel and shows the outcome', async () => {
    const { panel, focus } = setup();
    const start = panel.node.querySelector<HTMLButtonElement>('.gpudask-start')!;
    focus.focus('', true);
    expect(start.disabled).toBe(true);

    const execute = vi.fn(() => ({
      onIOPub: null,
      done: Promise.resolve({
        content: { status: 'error', ename: 'RuntimeError', evalue: 'no scheduler <b>' }
      })
    }));
    focus.kernel = {
      id: 'kernel-3',
      requestExecute: execute
    } as unknown as Kernel.IKernelConnection;
    focus.focus('kernel-3');
    expect(start.disabled).toBe(false);
    start.click();
    await vi.advanceTimersByTimeAsync(0);
    expect(execute).toHaveBeenCalledTimes(1);
    const outcome = panel.node.querySelector('.gpudask-outcome')!;
    expect(outcome.textContent).toBe('RuntimeError: no scheduler <b>');
    expect(outcome.querySelector('b')).toBeNull();
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
