/**
 * The task stream: one lane per worker thread, one rectangle per task from its start to its end,
 * on the view's shared time axis (a uPlot chart whose draw hook paints the rectangles), with the
 * lanes named on the left axis and a tooltip naming the task under the pointer.
 */
import uPlot from 'uplot';
import {
  ChartParts,
  PADDING_TOP,
  attachPointer,
  baseOptions,
  boxHook,
  chartMetrics,
  selectHook,
  yAxis
} from './charts';
import { ERROR_OUTLINE, fillOf } from './colors';
import { el } from './dom';
import { TaskRect, WorkerInfo } from './frame';
import { LABEL_ROW, Lane, assignLanes, hoverLines, laneKey, rowHeight, taskAt } from './lanes';

/** What an empty stream says. */
export const NO_TASKS =
  'No tasks yet: what the cluster runs appears here, one row per worker thread.';

export const NONE_IN_WINDOW = 'No task ran in this time window: double-click or Follow work.';

/** What the time axis measures. */
export const TIME_LABEL = 'time of day';

/** The characters of a label that fit a left axis `axis` px wide in a `fontSize` px font. */
export function labelChars(axis: number, fontSize: number): number {
  return Math.max(4, Math.floor((axis - 6) / (fontSize * 0.58)));
}

/** A label cut to `chars` characters: its end is kept ("…ker 12 #2"), where workers' names
 * differ (numbers, ports). */
export function laneLabel(label: string, chars: number): string {
  return label.length <= chars ? label : `…${label.slice(label.length - chars + 1)}`;
}

/** Axis ticks for the lanes: every lane when rows are tall enough, else one per worker; the
 * worker's name on its first lane. */
export function laneTicks(
  lanes: Lane[],
  row: number,
  fontSize = 12,
  chars = 9
): { splits: number[]; labels: string[] } {
  const n = lanes.length;
  const every = row >= LABEL_ROW * fontSize;
  const splits: number[] = [];
  const labels: string[] = [];
  lanes.forEach((lane, i) => {
    const firstOfWorker = i === 0 || lanes[i - 1].worker !== lane.worker;
    if (every || firstOfWorker) {
      // a worker's name on its first lane, "#2", "#3" on the next: "worker 0 #2" did not fit
      splits.push(n - i - 0.5);
      labels.push(laneLabel(firstOfWorker ? lane.name : `#${lane.place}`, chars));
    }
  });
  return { splits, labels };
}

export class TaskChart {
  readonly node = el('section', 'gpudask-stream');
  private readonly plotHost = el('div', 'gpudask-chart-plot');
  private readonly tooltip = el('div', 'gpudask-tooltip');
  private plot: uPlot | null = null;
  private rects: TaskRect[] = [];
  private lanes: Lane[] = [];
  private index = new Map<string, number>();
  private colors: ReadonlyMap<string, string> = new Map();
  private row = 18;
  private large = false;
  private pointerInside = false;
  private readonly empty = el('div', 'gpudask-stream-empty');

  constructor(private readonly parts: ChartParts) {
    this.node.setAttribute('aria-label', 'Task stream');
    this.tooltip.hidden = true;
    this.tooltip.setAttribute('role', 'tooltip');
    this.plotHost.append(this.tooltip);
    this.empty.hidden = true;
    this.node.append(
      el('div', 'gpudask-chart-title', 'Task stream (one row per worker thread)'),
      this.empty,
      this.plotHost
    );
  }

  /** The tooltip's text now ("" when hidden): what tests read. */
  get hoverText(): string {
    return this.tooltip.hidden ? '' : (this.tooltip.textContent ?? '');
  }

  /** Redraw; returns the rectangles in the window and the number of lanes. */
  update(
    rects: TaskRect[],
    workers: WorkerInfo[],
    colors: ReadonlyMap<string, string>,
    width: number,
    names: Readonly<Record<string, string>> = {},
    held = rects.length
  ): { rects: number; lanes: number; row: number } {
    this.rects = rects;
    this.colors = colors;
    this.lanes = assignLanes(rects, workers, names);
    this.index = new Map(this.lanes.map((lane, i) => [laneKey(lane.worker, lane.thread), i]));
    this.row = rowHeight(this.lanes.length, width);
    const metrics = chartMetrics(this.parts.large());
    const height =
      Math.max(1, this.lanes.length) * this.row + metrics.xAxis + metrics.fontSize + PADDING_TOP;
    const w = Math.floor(width);
    if (this.plot && this.large !== this.parts.large()) {
      this.destroy(); // its text was sized for the other layout
    }
    // nothing ran in the window yet: a sentence, not empty axes
    this.empty.hidden = this.lanes.length > 0;
    this.plotHost.hidden = this.lanes.length === 0;
    if (this.lanes.length === 0) {
      this.empty.textContent = held === 0 ? NO_TASKS : NONE_IN_WINDOW;
    }
    if (!this.plot) {
      this.large = this.parts.large();
      this.plot = this.create(w, height);
    } else if (this.plot.width !== w || this.plot.height !== height) {
      this.plot.setSize({ width: w, height });
    }
    const range = this.parts.range();
    this.plot.setData([[range.start, range.end]], true);
    const drawn = rects.filter(r => this.index.has(laneKey(r.worker, r.thread))).length;
    return { rects: drawn, lanes: this.lanes.length, row: this.row };
  }

  destroy(): void {
    this.plot?.destroy();
    this.plot = null;
  }

  private create(width: number, height: number): uPlot {
    const base = baseOptions(this.parts, width, height);
    const metrics = chartMetrics(this.large);
    const chars = labelChars(metrics.axis, metrics.fontSize);
    const ticks = (): { splits: number[]; labels: string[] } =>
      laneTicks(this.lanes, this.row, metrics.fontSize, chars);
    const plot = new uPlot(
      {
        ...base,
        scales: { ...base.scales, lanes: { range: () => [0, Math.max(1, this.lanes.length)] } },
        axes: [
          {
            ...base.xAxis,
            label: TIME_LABEL,
            labelSize: metrics.fontSize + 2,
            labelFont: metrics.font,
            labelGap: 0
          },
          yAxis(this.parts, {
            scale: 'lanes',
            grid: { show: false },
            ticks: { show: false },
            splits: () => ticks().splits,
            values: () => ticks().labels
          })
        ],
        series: [{}],
        hooks: {
          draw: [(u: uPlot) => this.draw(u), boxHook],
          setSelect: [selectHook(this.parts)],
          setCursor: [(u: uPlot) => this.hover(u)]
        }
      },
      [[]],
      this.plotHost
    );
    attachPointer(plot, this.parts);
    plot.over.addEventListener('mouseenter', () => (this.pointerInside = true), {
      signal: this.parts.signal
    });
    plot.over.addEventListener(
      'mouseleave',
      () => {
        this.pointerInside = false;
        this.tooltip.hidden = true;
      },
      { signal: this.parts.signal }
    );
    return plot;
  }

  private draw(u: uPlot): void {
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const n = Math.max(1, this.lanes.length);
    const row = height / n;
    const gap = row > 6 * uPlot.pxRatio ? uPlot.pxRatio : 0;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    for (const rect of this.rects) {
      const lane = this.index.get(laneKey(rect.worker, rect.thread));
      if (lane === undefined) {
        continue;
      }
      const x0 = u.valToPos(rect.start, 'x', true);
      const x1 = u.valToPos(rect.stop, 'x', true);
      const x = Math.max(left - 1, x0);
      let w = Math.max(uPlot.pxRatio, Math.min(left + width + 1, x1) - x);
      if (w > 3 * uPlot.pxRatio) {
        w -= uPlot.pxRatio; // a hair of background between one task and the next
      }
      const y = top + lane * row + gap;
      const h = row - 2 * gap;
      ctx.fillStyle = fillOf(rect, this.colors);
      ctx.fillRect(x, y, w, h);
      if (rect.error) {
        ctx.strokeStyle = ERROR_OUTLINE;
        ctx.lineWidth = uPlot.pxRatio;
        ctx.strokeRect(x + 0.5, y + 0.5, Math.max(0, w - 1), Math.max(0, h - 1));
      }
    }
    ctx.restore();
  }

  private hover(u: uPlot): void {
    const { left, top } = u.cursor;
    if (!this.pointerInside || left === undefined || top === undefined || left < 0 || top < 0) {
      this.tooltip.hidden = true;
      return;
    }
    const t = u.posToVal(left, 'x');
    const lane = Math.floor(top / this.row);
    const slack = u.posToVal(left + 3, 'x') - t || 0;
    const rect = taskAt(this.rects, this.lanes, lane, t, Math.abs(slack));
    if (!rect) {
      this.tooltip.hidden = true;
      return;
    }
    this.showTooltip(hoverLines(rect, this.lanes[lane]), u, left, top);
  }

  /** Show `lines` next to the pointer, inside the chart. */
  showTooltip(lines: string[], u: uPlot, left: number, top: number): void {
    this.tooltip.replaceChildren(
      ...lines.map((line, i) => el('div', i === 0 ? 'gpudask-tooltip-title' : undefined, line))
    );
    this.tooltip.hidden = false;
    const offset = u.bbox.left / uPlot.pxRatio;
    const width = this.tooltip.offsetWidth || 200;
    const x = offset + left + 12;
    const flip = x + width > u.width;
    this.tooltip.style.left = `${Math.max(0, flip ? offset + left - width - 12 : x)}px`;
    this.tooltip.style.top = `${top + 12 + PADDING_TOP}px`;
  }
}
