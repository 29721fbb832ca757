/**
 * The controls: refresh interval, pause, history length, GPU processes. They only report what
 * the user asked for through onControl; the host decides and calls setControls to show it.
 */
import { el } from './dom';
import { clampHistory, clampInterval, DEFAULT_HISTORY, DEFAULT_INTERVAL } from './frame';
import { formatDuration } from './format';

export interface Controls {
  /** Seconds between frames, 0.25–10. */
  interval: number;
  paused: boolean;
  /** Seconds of history shown, 10–3600. */
  history: number;
  /** Show GPU processes. */
  processes: boolean;
}

export const DEFAULT_CONTROLS: Controls = {
  interval: DEFAULT_INTERVAL,
  paused: false,
  history: DEFAULT_HISTORY,
  processes: false
};

export const HISTORY_CHOICES = [10, 30, 60, 120, 300, 600, 900, 1800, 3600];

/** Controls with every value clamped to its range (unknown values: the current ones). */
export function normalizeControls(change: Partial<Controls>, current: Controls): Controls {
  return {
    interval: change.interval === undefined ? current.interval : clampInterval(change.interval),
    paused: change.paused === undefined ? current.paused : Boolean(change.paused),
    history: change.history === undefined ? current.history : clampHistory(change.history),
    processes: change.processes === undefined ? current.processes : Boolean(change.processes)
  };
}

/** The interval typed by the user, clamped; what is not a number keeps the current value. */
export function parseInterval(text: string, current: number): number {
  const value = parseFloat(text);
  return Number.isFinite(value) ? clampInterval(value) : current;
}

export class ControlsSection {
  readonly node = el('div', 'gpudask-controls');
  private readonly interval = el('input', 'gpudask-interval');
  private readonly history = el('select', 'gpudask-history-length');
  private readonly pause = el('button', 'jp-Button jp-mod-styled gpudask-button gpudask-pause');
  private readonly processes = el('input', 'gpudask-show-processes');
  private readonly processesLabel = el('label');

  /**
   * `current` reads the view's controls at the time of the event, not at the last paint: two
   * clicks on Pause within one animation frame must pause and resume.
   */
  constructor(
    private readonly current: () => Controls,
    onControl: (change: Partial<Controls>) => void,
    signal: AbortSignal
  ) {
    this.interval.type = 'number';
    this.interval.min = '0.25';
    this.interval.max = '10';
    this.interval.step = '0.25';
    this.interval.title = 'Seconds between updates (0.25–10)';
    this.processes.type = 'checkbox';
    this.processesLabel.append(this.processes, el('span', undefined, ' GPU processes'));
    this.pause.type = 'button';
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-label', 'Panel settings');

    const label = (text: string, ...children: HTMLElement[]): HTMLLabelElement => {
      const node = el('label', undefined, text);
      node.append(...children);
      return node;
    };
    this.node.append(
      label('Refresh every ', this.interval, el('span', undefined, ' s')),
      label('History ', this.history),
      this.pause,
      this.processesLabel
    );

    this.interval.addEventListener(
      'change',
      () => {
        const interval = parseInterval(this.interval.value, this.current().interval);
        this.interval.value = String(interval);
        onControl({ interval });
      },
      { signal }
    );
    this.history.addEventListener(
      'change',
      () => onControl({ history: clampHistory(Number(this.history.value)) }),
      { signal }
    );
    this.pause.addEventListener('click', () => onControl({ paused: !this.current().paused }), {
      signal
    });
    this.processes.addEventListener(
      'change',
      () => onControl({ processes: this.processes.checked }),
      { signal }
    );
  }

  /** `gpus`: whether there is a GPU whose processes could be listed (none: no such box). */
  show(controls: Controls, gpus = true): void {
    this.processesLabel.hidden = !gpus;
    if (this.interval.ownerDocument.activeElement !== this.interval) {
      this.interval.value = String(controls.interval);
    }
    this.showHistory(controls.history);
    this.pause.textContent = controls.paused ? 'Resume' : 'Pause';
    this.pause.setAttribute('aria-pressed', String(controls.paused));
    this.processes.checked = controls.processes;
  }

  /** The preset choices, plus the current value when it is not one of them. */
  private showHistory(history: number): void {
    const choices = HISTORY_CHOICES.includes(history)
      ? HISTORY_CHOICES
      : [...HISTORY_CHOICES, history].sort((a, b) => a - b);
    const values = choices.map(String);
    const present = [...this.history.options].map(o => o.value);
    if (values.join() !== present.join()) {
      this.history.replaceChildren(
        ...choices.map(seconds => {
          const option = el('option', undefined, formatDuration(seconds));
          option.value = String(seconds);
          return option;
        })
      );
    }
    this.history.value = String(history);
  }
}
