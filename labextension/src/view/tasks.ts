/**
 * The task stream (one canvas row per worker thread, on the shared time axis) and its legend:
 * task prefixes with their colours and the most recent task keys, as text.
 */
import { TimeAxis, tasksInWindow } from './axis';
import { drawTasks, fitCanvas } from './canvas';
import { el, safeColor, setText } from './dom';
import { TaskRect } from './frame';
import { formatDuration } from './format';
import { ViewState, assignLanes, laneKey } from './state';

const RECENT_KEYS = 5;
const MAX_PREFIXES = 12;

/** Rows shrink as lanes grow so that 64 threads stay on one screen; labels need 10 px. */
export function rowHeight(lanes: number): number {
  return Math.max(3, Math.min(14, Math.floor(240 / Math.max(1, lanes))));
}

/** Prefixes with the colour of their newest rectangle, the most recently active first. */
export function legendPrefixes(rects: TaskRect[]): [string, string][] {
  const newest = new Map<string, TaskRect>();
  for (const rect of rects) {
    const seen = newest.get(rect.prefix);
    if (!seen || rect.stop >= seen.stop) {
      newest.set(rect.prefix, rect);
    }
  }
  return [...newest.values()]
    .sort((a, b) => b.stop - a.stop)
    .slice(0, MAX_PREFIXES)
    .map(r => [r.prefix, r.color]);
}

export function recentTasks(rects: TaskRect[], count = RECENT_KEYS): TaskRect[] {
  return [...rects].sort((a, b) => b.stop - a.stop).slice(0, count);
}

export class TaskStream {
  readonly node = el('div', 'gpudask-stream');
  readonly canvas = el('canvas', 'gpudask-tasks');
  readonly legend = el('div', 'gpudask-legend');
  private readonly lanes = el('div', 'gpudask-gutter gpudask-lanes');
  private readonly from = el('span');
  private readonly to = el('span', undefined, 'now');

  constructor() {
    const row = el('div', 'gpudask-row');
    const plot = el('div', 'gpudask-plot');
    plot.append(this.canvas);
    row.append(this.lanes, plot);
    const axisRow = el('div', 'gpudask-row');
    const ticks = el('div', 'gpudask-plot gpudask-ticks');
    ticks.append(this.from, this.to);
    axisRow.append(el('div', 'gpudask-gutter'), ticks);
    this.node.append(row, axisRow);
  }

  /** Redraw; returns the rectangles drawn and the number of lanes. */
  update(state: ViewState, axis: TimeAxis): { rects: number; lanes: number } {
    const rects = tasksInWindow(state.tasks, axis);
    const lanes = assignLanes(rects, state.workers);
    const height = rowHeight(lanes.length);
    const index = new Map(lanes.map((lane, i) => [laneKey(lane.worker, lane.thread), i]));

    this.updateLaneLabels(
      lanes.map(l => l.label),
      height
    );
    setText(this.from, `−${formatDuration(axis.end - axis.start)}`);
    const ctx = fitCanvas(this.canvas, axis.width, Math.max(1, lanes.length) * height);
    const drawn = drawTasks(ctx, axis, rects, index, height);
    this.updateLegend(rects);
    return { rects: drawn, lanes: lanes.length };
  }

  private updateLaneLabels(labels: string[], height: number): void {
    if (labels.length === 0) {
      this.lanes.replaceChildren(el('div', 'gpudask-muted', 'No tasks in this window'));
      return;
    }
    const showText = height >= 10;
    this.lanes.replaceChildren(
      ...labels.map(label => {
        const node = el('div', 'gpudask-lane', showText ? label : '');
        node.style.height = `${height}px`;
        node.style.lineHeight = `${height}px`;
        node.title = label;
        return node;
      })
    );
  }

  private updateLegend(rects: TaskRect[]): void {
    const items = legendPrefixes(rects).map(([prefix, color]) => {
      const item = el('span', 'gpudask-legend-item');
      const swatch = el('span', 'gpudask-swatch');
      swatch.style.backgroundColor = safeColor(color);
      item.append(swatch, document.createTextNode(prefix));
      return item;
    });
    const recent = recentTasks(rects);
    const keys = el('div', 'gpudask-recent');
    if (recent.length > 0) {
      keys.append(el('span', 'gpudask-muted', 'Recent: '));
      for (const rect of recent) {
        const key = el('span', rect.error ? 'gpudask-key gpudask-erred' : 'gpudask-key', rect.key);
        key.title = `${rect.key} (${rect.action}${rect.error ? ', erred' : ''})`;
        keys.append(key);
      }
    }
    const prefixes = el('div', 'gpudask-prefixes');
    prefixes.append(...items);
    this.legend.replaceChildren(prefixes, keys);
  }
}
