/**
 * The time window's controls: "Follow work" (the default), "All history", and what is shown,
 * with how to zoom (drag over a chart; ctrl/⌘-wheel; shift-wheel pans; double-click follows).
 */
import { el, setText } from './dom';
import { formatClock, formatDuration } from './format';
import { TimeRange, WindowMode } from './timewindow';

export function windowText(mode: WindowMode, range: TimeRange): string {
  const span = formatDuration(Math.max(0, range.end - range.start));
  const shown = `${formatClock(range.start)}–${formatClock(range.end)} (${span})`;
  switch (mode.kind) {
    case 'all':
      return `All history: ${shown}`;
    case 'fixed':
      return `Zoomed: ${shown}. Double-click a chart to follow the work again.`;
    default:
      return `Following the work: ${shown}. Drag over a chart to zoom.`;
  }
}

export class WindowBar {
  readonly node = el('div', 'gpudask-windowbar');
  private readonly follow = el(
    'button',
    'jp-Button jp-mod-styled gpudask-button gpudask-follow',
    'Follow work'
  );
  private readonly all = el(
    'button',
    'jp-Button jp-mod-styled gpudask-button gpudask-all',
    'All history'
  );
  private readonly text = el('span', 'gpudask-window-text');

  constructor(onMode: (mode: WindowMode) => void, signal: AbortSignal) {
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-label', 'Time window');
    for (const [button, mode] of [
      [this.follow, { kind: 'follow' }],
      [this.all, { kind: 'all' }]
    ] as const) {
      button.type = 'button';
      button.addEventListener('click', () => onMode(mode), { signal });
    }
    this.follow.title = 'Zoom to the latest work (double-click a chart does the same).';
    this.all.title = 'Show the whole history kept.';
    this.node.append(this.follow, this.all, this.text);
  }

  show(mode: WindowMode, range: TimeRange): void {
    this.follow.setAttribute('aria-pressed', String(mode.kind === 'follow'));
    this.all.setAttribute('aria-pressed', String(mode.kind === 'all'));
    setText(this.text, windowText(mode, range));
  }
}
