// @vitest-environment jsdom
import { afterEach, describe, expect, it, vi } from 'vitest';
import { clampHistory, clampInterval } from '../src/view/frame';
import { DEFAULT_CONTROLS, normalizeControls, parseInterval } from '../src/view/controls';
import { GpuDaskView } from '../src/view/render';

afterEach(() => document.body.replaceChildren());

describe('clamping', () => {
  it('clamps the interval to 0.25–10 s like frame.py', () => {
    expect(clampInterval(0.1)).toBe(0.25);
    expect(clampInterval(2)).toBe(2);
    expect(clampInterval(60)).toBe(10);
    expect(clampInterval(Number.NaN)).toBe(1);
  });

  it('clamps the history to 10 s – 60 min like frame.py', () => {
    expect(clampHistory(1)).toBe(10);
    expect(clampHistory(300)).toBe(300);
    expect(clampHistory(86400)).toBe(3600);
    expect(clampHistory(Number.POSITIVE_INFINITY)).toBe(300);
  });

  it('parses typed intervals, keeping the current one for non-numbers', () => {
    expect(parseInterval('0.5', 1)).toBe(0.5);
    expect(parseInterval('0', 1)).toBe(0.25);
    expect(parseInterval('100', 1)).toBe(10);
    expect(parseInterval('fast', 2)).toBe(2);
  });

  it('normalizes control changes', () => {
    expect(normalizeControls({ interval: 50, history: 5 }, DEFAULT_CONTROLS)).toEqual({
      ...DEFAULT_CONTROLS,
      interval: 10,
      history: 10
    });
    expect(normalizeControls({}, DEFAULT_CONTROLS)).toEqual(DEFAULT_CONTROLS);
  });
});

describe('controls', () => {
  function setup() {
    const onControl = vi.fn();
    const container = document.createElement('div');
    document.body.append(container);
    const view = new GpuDaskView(container, { onControl, controls: { interval: 2, history: 600 } });
    view.flush();
    const q = <T extends Element>(selector: string) => view.root.querySelector<T>(selector)!;
    return { view, onControl, q };
  }

  it('reports a clamped interval', () => {
    const { onControl, q } = setup();
    const input = q<HTMLInputElement>('.gpudask-controls .gpudask-interval');
    expect(input.value).toBe('2');
    input.value = '20';
    input.dispatchEvent(new Event('change'));
    expect(onControl).toHaveBeenLastCalledWith({ interval: 10 });
    expect(input.value).toBe('10');
    input.value = 'soon';
    input.dispatchEvent(new Event('change'));
    expect(onControl).toHaveBeenLastCalledWith({ interval: 2 });
  });

  it('reports history, pause and processes; shows what the host sets', () => {
    const { view, onControl, q } = setup();
    const history = q<HTMLSelectElement>('.gpudask-history-length');
    expect(history.value).toBe('600');
    history.value = '3600';
    history.dispatchEvent(new Event('change'));
    expect(onControl).toHaveBeenLastCalledWith({ history: 3600 });

    const pause = q<HTMLButtonElement>('.gpudask-pause');
    expect(pause.textContent).toBe('Pause');
    pause.click();
    expect(onControl).toHaveBeenLastCalledWith({ paused: true });
    expect(pause.textContent).toBe('Pause'); // the host decides
    view.setControls({ paused: true });
    view.flush();
    expect(pause.textContent).toBe('Resume');
    pause.click();
    expect(onControl).toHaveBeenLastCalledWith({ paused: false });

    const processes = q<HTMLInputElement>('.gpudask-show-processes');
    processes.checked = true;
    processes.dispatchEvent(new Event('change'));
    expect(onControl).toHaveBeenLastCalledWith({ processes: true });
  });

  it('offers a history that is not a preset', () => {
    const { view, q } = setup();
    view.setControls({ history: 45 });
    view.flush();
    const history = q<HTMLSelectElement>('.gpudask-history-length');
    expect(history.value).toBe('45');
    expect(history.selectedOptions[0].textContent).toBe('45 s');
  });
});
