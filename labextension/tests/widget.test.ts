// @vitest-environment jsdom
import { afterEach, describe, expect, it } from 'vitest';
import widget from '../src/widget';
import { T0, frame, gpuSample } from './fixtures';

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

function mount(traits: Record<string, unknown> = {}) {
  const model = new FakeModel({
    interval: 1,
    paused: false,
    history: 300,
    processes: false,
    ...traits
  });
  const el = document.createElement('div');
  document.body.append(el);
  // the anywidget runtime passes more props; render only uses these two
  const cleanup = widget.render({ model, el } as never);
  const root = () => el.querySelector<HTMLElement>('.gpudask-view');
  return { model, el, cleanup, root };
}

const hello = { type: 'hello' };

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

  it('removes its listeners and its DOM on cleanup', () => {
    const { model, el, cleanup } = mount();
    expect(model.listeners()).toBe(5);
    (cleanup as () => void)();
    expect(model.listeners()).toBe(0);
    expect(el.querySelector('.gpudask-view')).toBeNull();
    model.emit('msg:custom', { type: 'frame', frame: frame() }); // nobody listens: no error
  });
});
