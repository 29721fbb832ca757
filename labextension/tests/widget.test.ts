// @vitest-environment jsdom
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Signal } from '@lumino/signaling';
import widget, { ASK_AGAIN_MAX_MS, ASK_AGAIN_MS, UNHEARD_AFTER, UNHEARD_TEXT } from '../src/widget';
import { controlMessage, parseKernelMessage } from '../src/anywidget/protocol';
import { T0, frame, gpuSample } from './fixtures';
import { fakeTimers } from './timers';

type Handler = (...args: unknown[]) => void;

/** Enough of an anywidget model: traits, Backbone-like events, sent messages. */
class FakeModel {
  sent: unknown[] = [];
  saves = 0;
  private handlers = new Map<string, Set<Handler>>();
  constructor(private traits: Record<string, unknown>) {}

  get(name: string): unknown {
    return this.traits[name];
  }
  set(name: string, value: unknown): void {
    const changed = this.traits[name] !== value;
    this.traits[name] = value;
    if (changed) {
      this.emit(`change:${name}`);
    }
  }
  save_changes(): void {
    this.saves += 1;
  }
  send(content: unknown): void {
    this.sent.push(content);
  }
  on(name: string, handler: Handler): void {
    if (!this.handlers.has(name)) {
      this.handlers.set(name, new Set());
    }
    this.handlers.get(name)!.add(handler);
  }
  off(name: string, handler: Handler): void {
    this.handlers.get(name)?.delete(handler);
  }
  listeners(): number {
    return [...this.handlers.values()].reduce((n, set) => n + set.size, 0);
  }
  emit(name: string, ...args: unknown[]): void {
    for (const handler of this.handlers.get(name) ?? []) {
      handler(...args);
    }
  }
  /** What the kernel does: a change from Python. */
  python(name: string, value: unknown): void {
    this.set(name, value);
  }
}

afterEach(() => document.body.replaceChildren());

function mount(traits: Record<string, unknown> = {}, manager?: unknown) {
  const model = new FakeModel({
    interval: 1,
    paused: false,
    history: 300,
    processes: false,
    ...traits
  });
  if (manager) {
    Object.assign(model, { widget_manager: manager });
  }
  const el = document.createElement('div');
  document.body.append(el);
  // the anywidget runtime passes more props; render only uses these two
  const cleanup = widget.render({ model, el } as never);
  const root = () => el.querySelector<HTMLElement>('.gpudask-view');
  return { model, el, cleanup, root };
}

const hello = { type: 'hello', view: expect.any(String) };

describe('anywidget front end', () => {
  it('says hello and draws the frames the kernel sends', () => {
    const { model, root } = mount();
    expect(model.sent).toEqual([hello]);
    model.emit('msg:custom', { type: 'frame', frame: frame({ samples: [gpuSample(T0, 5, 1)] }) });
    model.emit('msg:custom', { type: 'something else' });
    model.emit('msg:custom', {
      type: 'frame',
      frame: frame({ kind: 'delta', time: T0 + 1 })
    });
    window.dispatchEvent(new Event('resize'));
    return new Promise<void>(resolve =>
      requestAnimationFrame(() => {
        expect(root()?.dataset.frames).toBe('2');
        expect(root()?.dataset.devices).toBe('1');
        resolve();
      })
    );
  });

  it('starts from the traits and sets them from the controls', () => {
    const { model, root } = mount({ interval: 0.5, history: 60 });
    const input = root()!.querySelector<HTMLInputElement>('.gpudask-interval')!;
    expect(input.value).toBe('0.5');
    input.value = '3';
    input.dispatchEvent(new Event('change'));
    expect(model.get('interval')).toBe(3);
    expect(model.saves).toBe(1);
  });

  it('ignores frames while paused and asks for a snapshot on resume', () => {
    const { model, root } = mount();
    const pause = root()!.querySelector<HTMLButtonElement>('.gpudask-pause')!;
    pause.click();
    expect(model.get('paused')).toBe(true);
    model.emit('msg:custom', { type: 'frame', frame: frame() });
    expect(root()?.dataset.frames).toBe('0');
    expect(model.sent).toEqual([hello]);

    pause.click();
    expect(model.get('paused')).toBe(false);
    expect(model.sent).toEqual([hello, hello]);

    // paused and resumed from Python
    model.python('paused', true);
    model.python('paused', false);
    expect(model.sent).toEqual([hello, hello, hello]);
  });

  it('follows changes made in Python', () => {
    const { model, root } = mount();
    model.python('history', 3600);
    model.python('processes', true);
    return new Promise<void>(resolve =>
      requestAnimationFrame(() => {
        const view = root()!;
        expect(view.querySelector<HTMLSelectElement>('.gpudask-history-length')!.value).toBe(
          '3600'
        );
        expect(view.querySelector<HTMLInputElement>('.gpudask-show-processes')!.checked).toBe(true);
        resolve();
      })
    );
  });

  it('says bye, and removes its listeners and its DOM, on cleanup', () => {
    const { model, el, cleanup } = mount();
    expect(model.listeners()).toBe(6); // messages, 4 traits, comm:close
    (cleanup as () => void)();
    expect(model.sent.at(-1)).toEqual({
      type: 'bye',
      view: (model.sent[0] as { view: string }).view
    });
    expect(model.listeners()).toBe(0);
    expect(el.querySelector('.gpudask-view')).toBeNull();
    model.emit('msg:custom', { type: 'frame', frame: frame() }); // nobody listens: no error
  });

  it('asks again when frames come without the snapshot its hello asked for', () => {
    fakeTimers();
    try {
      const { model } = mount();
      const delta = () =>
        model.emit('msg:custom', { type: 'frame', frame: frame({ kind: 'delta', time: T0 + 1 }) });
      delta(); // frames sent before the hello arrived: not yet a sign it was lost
      expect(model.sent).toEqual([hello]);
      vi.advanceTimersByTime(ASK_AGAIN_MS);
      delta(); // still no snapshot: the hello was lost on the way
      expect(model.sent).toEqual([hello, hello]);
      delta(); // asked just now: wait again
      expect(model.sent).toEqual([hello, hello]);
      vi.advanceTimersByTime(ASK_AGAIN_MS);
      delta(); // the next wait is twice as long
      expect(model.sent).toEqual([hello, hello]);
      vi.advanceTimersByTime(ASK_AGAIN_MS);
      delta();
      expect(model.sent).toEqual([hello, hello, hello]);
      model.emit('msg:custom', { type: 'frame', frame: frame() }); // the snapshot
      vi.advanceTimersByTime(ASK_AGAIN_MAX_MS);
      delta();
      expect(model.sent).toEqual([hello, hello, hello]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('says so when its asks go unanswered, and stops saying it at the snapshot', async () => {
    fakeTimers();
    try {
      const { model, root } = mount();
      const delta = () =>
        model.emit('msg:custom', { type: 'frame', frame: frame({ kind: 'delta', time: T0 + 1 }) });
      const said = async () => {
        await vi.advanceTimersByTimeAsync(50); // a paint
        return root()?.querySelector('.gpudask-messages')?.textContent ?? '';
      };
      let wait = ASK_AGAIN_MS;
      for (let asked = 1; asked < UNHEARD_AFTER; asked++) {
        vi.advanceTimersByTime(wait);
        wait *= 2;
        delta();
        expect(model.sent).toHaveLength(1 + asked);
        expect(await said()).not.toContain(UNHEARD_TEXT);
      }
      vi.advanceTimersByTime(wait);
      delta();
      expect(model.sent).toHaveLength(1 + UNHEARD_AFTER);
      expect(await said()).toContain(UNHEARD_TEXT);
      model.emit('msg:custom', { type: 'frame', frame: frame() }); // heard at last
      expect(await said()).not.toContain(UNHEARD_TEXT);
    } finally {
      vi.useRealTimers();
    }
  });

  it('asks for nothing while paused, and says hello as it resumes', () => {
    fakeTimers();
    try {
      const { model } = mount({ paused: true });
      const delta = () =>
        model.emit('msg:custom', { type: 'frame', frame: frame({ kind: 'delta', time: T0 + 1 }) });
      vi.advanceTimersByTime(ASK_AGAIN_MAX_MS);
      delta(); // ignored: a paused view takes no frame, so it learns nothing from one
      expect(model.sent).toEqual([hello]);
      model.python('paused', false);
      expect(model.sent).toEqual([hello, hello]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("tells its views apart: one view's bye names only that view", () => {
    const first = mount();
    const second = mount();
    const [a, b] = [first, second].map(m => (m.model.sent[0] as { view: string }).view);
    expect(a).not.toBe(b);
    (first.cleanup as () => void)();
    expect(first.model.sent.at(-1)).toEqual({ type: 'bye', view: a });
    expect(second.model.sent).toEqual([{ type: 'hello', view: b }]);
  });

  it('runs cluster actions through the comm and shows their progress and result', () => {
    fakeTimers();
    try {
      const { model, root } = mount();
      model.emit('msg:custom', { type: 'frame', frame: frame() });
      vi.advanceTimersByTime(20);
      const stop = root()!.querySelector<HTMLButtonElement>('.gpudask-stop')!;
      expect(stop.disabled).toBe(false);
      expect(root()!.querySelector<HTMLButtonElement>('.gpudask-start')!.disabled).toBe(true);
      stop.click();
      expect(model.sent.at(-1)).toEqual({ type: 'control', id: 1, action: 'stop' });
      const status = () => root()!.querySelector('.gpudask-action-status')!.textContent;
      vi.advanceTimersByTime(2000);
      vi.advanceTimersByTime(20);
      expect(status()).toContain('waiting for the cell that is running in this kernel to finish');

      model.emit('msg:custom', { type: 'control-started', id: 1 });
      vi.advanceTimersByTime(20);
      expect(status()).toMatch(/^Stopping the cluster… \d+ s$/);

      model.emit('msg:custom', {
        type: 'control-result',
        id: 1,
        ok: true,
        action: 'stop',
        text: 'Stopped the cluster at tcp://127.0.0.1:8786.',
        cluster: null
      });
      vi.advanceTimersByTime(20);
      expect(status()).toBe(
        'Stop: done.Stopped the cluster at tcp://127.0.0.1:8786.No cluster now.'
      );

      // scale sends the number typed
      const input = root()!.querySelector<HTMLInputElement>('.gpudask-scale-input')!;
      input.value = '3';
      root()!.querySelector<HTMLButtonElement>('.gpudask-scale .gpudask-button')!.click();
      expect(model.sent.at(-1)).toEqual({ type: 'control', id: 2, action: 'scale', n: 3 });
    } finally {
      vi.useRealTimers();
    }
  });

  it('says within two seconds that its kernel went, and stops drawing frames', async () => {
    const { model, root } = mount();
    model.emit('msg:custom', { type: 'frame', frame: frame() });
    model.emit('comm:close');
    model.emit('msg:custom', { type: 'frame', frame: frame({ kind: 'delta', time: T0 + 1 }) });
    await new Promise(r => requestAnimationFrame(r));
    const view = root()!;
    expect(view.dataset.liveness).toBe('gone');
    expect(view.dataset.frames).toBe('1');
    expect(view.querySelector('.gpudask-messages')!.textContent).toContain('run its cell again');
    expect(view.classList.contains('gpudask-stopped')).toBe(true);
    // nothing to run it in: no action is offered
    const start = view.querySelector<HTMLButtonElement>('.gpudask-start')!;
    expect(start.disabled).toBe(true);
    expect(start.title).toBe('No kernel to run it in.');
  });

  it("follows the kernel's status where the widget manager shows it", async () => {
    const statusChanged = new Signal<object, string>({});
    const { model, root } = mount({}, { kernel: { status: 'idle', statusChanged } });
    model.emit('msg:custom', { type: 'frame', frame: frame() });
    statusChanged.emit('busy');
    await new Promise(r => requestAnimationFrame(r));
    expect(root()!.dataset.liveness).toBe('live');
    statusChanged.emit('restarting');
    await new Promise(r => requestAnimationFrame(r));
    expect(root()!.dataset.liveness).toBe('gone');
    expect(root()!.querySelector('.gpudask-messages')!.textContent).toContain('restarting');
    statusChanged.emit('starting');
    statusChanged.emit('idle'); // the restart is over: said in the past tense
    await new Promise(r => requestAnimationFrame(r));
    const text = root()!.querySelector('.gpudask-messages')!.textContent;
    expect(text).toMatch(/The kernel restarted at \d\d:\d\d:\d\d: its cluster stopped with it/);
    expect(text).not.toContain('restarting');
    expect(root()!.dataset.liveness).toBe('gone');
  });

  it('says "not responding" when no frame comes for max(2 s, 3 intervals)', () => {
    fakeTimers();
    try {
      const { model, root } = mount({ interval: 0.25 });
      model.emit('msg:custom', { type: 'frame', frame: frame() });
      vi.advanceTimersByTime(2100);
      vi.advanceTimersByTime(20);
      expect(root()!.dataset.liveness).toBe('stale');
      expect(root()!.querySelector('.gpudask-messages')!.textContent).toContain('not responding');
      model.emit('msg:custom', { type: 'frame', frame: frame({ kind: 'delta', time: T0 + 3 }) });
      vi.advanceTimersByTime(20);
      expect(root()!.dataset.liveness).toBe('live');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('widget protocol', () => {
  it('reads the kernel messages it knows and ignores the rest', () => {
    expect(parseKernelMessage({ type: 'frame', frame: 1 })).toEqual({ type: 'frame', frame: 1 });
    expect(parseKernelMessage({ type: 'control-started', id: 3 })).toEqual({
      type: 'control-started',
      id: 3
    });
    expect(parseKernelMessage({ type: 'control-started', id: '3' })).toBeNull();
    expect(
      parseKernelMessage({
        type: 'control-result',
        id: 3,
        ok: false,
        action: 'scale',
        text: 'no',
        cluster: null,
        time: 7
      })
    ).toEqual({
      type: 'control-result',
      id: 3,
      result: { ok: false, action: 'scale', text: 'no', cluster: null, time: 7 }
    });
    expect(parseKernelMessage({ type: 'control-result', id: 3, ok: 1 })).toBeNull();
    expect(parseKernelMessage('frame')).toBeNull();
    expect(controlMessage(1, 'start', null)).toEqual({ type: 'control', id: 1, action: 'start' });
    expect(controlMessage(2, 'scale', 4)).toEqual({
      type: 'control',
      id: 2,
      action: 'scale',
      n: 4
    });
  });
});
