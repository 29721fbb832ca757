/**
 * The GPU charts: utilisation (%) and memory (bytes) of every GPU over time, one line per GPU in
 * the GPU's colour, on the view's shared time axis; memory also as a dashed line for the part
 * held by this cluster's workers, where the frames say. Below each chart, a readout of the values
 * at the pointer (at the latest sample when the pointer is elsewhere), synced across the charts.
 */
import uPlot from 'uplot';
import { ChartParts, attachPointer, baseOptions, boxHook, selectHook, yAxis } from './charts';
import { el, markHeld, setText } from './dom';
import { DeviceInfo, FIELD, PALETTE } from './frame';
import { formatBytes, formatClock, formatPercent } from './format';
import { ClusterMemoryPoint, ViewState } from './state';
import { TimeRange } from './timewindow';
import { deviceTitle } from './devices';

/** One colour per GPU, the same in its summary row and its chart lines: the palette the task
 * prefixes use, for its contrast against both themes. */
export const GPU_COLORS = PALETTE;
export const CHART_HEIGHT = 96;

export function gpuColor(index: number): string {
  return GPU_COLORS[index % GPU_COLORS.length];
}

export interface GpuSeries {
  xs: number[];
  /** Per device: utilisation % per x (null: not reported). */
  util: (number | null)[][];
  /** Per device: memory used, bytes. */
  used: (number | null)[][];
  /** Per device: bytes held by the cluster's workers (the latest report at or before x). */
  cluster: (number | null)[][];
}

function finite(v: number | null | undefined): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** The latest cluster-memory report of `device` at or before `t`. */
function clusterAt(points: ClusterMemoryPoint[], device: string, t: number): number | null {
  let found: number | null = null;
  for (const p of points) {
    if (p.t > t) {
      break;
    }
    if (device in p.bytes) {
      found = p.bytes[device];
    }
  }
  return found;
}

/**
 * The charts' data for the samples in `range` (and one each side, so lines reach the edges).
 * Pure: tests check it without a canvas.
 */
export function gpuSeries(state: ViewState, devices: DeviceInfo[], range: TimeRange): GpuSeries {
  const samples = state.samples;
  let first = samples.findIndex(s => s.t >= range.start);
  first = first < 0 ? samples.length : Math.max(0, first - 1);
  let last = samples.length - 1;
  while (last > first && samples[last - 1].t > range.end) {
    last -= 1;
  }
  const shown = samples.slice(first, last + 1);
  const xs = shown.map(s => s.t);
  const pick = (id: string, field: number): (number | null)[] =>
    shown.map(s => finite(s.values[id]?.[field]));
  const hasCluster = new Set(state.clusterMemory.flatMap(p => Object.keys(p.bytes)));
  return {
    xs,
    util: devices.map(d => pick(d.id, FIELD.utilization)),
    used: devices.map(d => pick(d.id, FIELD.memory_used)),
    cluster: devices.map(d =>
      hasCluster.has(d.id)
        ? xs.map(t => clusterAt(state.clusterMemory, d.id, t))
        : xs.map(() => null)
    )
  };
}

/** A memory axis label in at most four figures and a unit: "0", "67 GiB", "134 GiB". */
export function axisBytes(bytes: number): string {
  const units: [string, number][] = [
    ['TiB', 2 ** 40],
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
    ['KiB', 2 ** 10]
  ];
  for (const [unit, size] of units) {
    if (bytes >= size * 0.95) {
      const v = bytes / size;
      return `${v >= 10 ? Math.round(v) : Math.round(v * 10) / 10} ${unit}`;
    }
  }
  return bytes <= 0 ? '0' : `${Math.round(bytes)} B`;
}

/** The largest memory a device of `devices` has (0: none reported). */
export function memoryCapacity(devices: DeviceInfo[]): number {
  return Math.max(0, ...devices.map(d => d.memory_total ?? 0));
}

/**
 * The memory axis's top: the first power of two (from 128 MiB) above what any GPU uses in the
 * window, so that 1.5 GiB of a 140 GiB GPU reads as a line and not as the floor, and the middle
 * tick is round too; never above the largest GPU's memory, which the chart's title states.
 */
export function memoryCeiling(devices: DeviceInfo[], series: GpuSeries): number {
  const values = [...series.used.flat(), ...series.cluster.flat()];
  const used = Math.max(0, ...values.map(v => v ?? 0));
  let top = 2 ** 27;
  while (top < used * 1.1) {
    top *= 2;
  }
  const capacity = memoryCapacity(devices);
  return capacity > 0 && capacity >= used ? Math.min(top, capacity) : top;
}

/** The memory chart's title: what the dashes mean and what the GPUs hold in all. */
export function memoryTitle(devices: DeviceInfo[]): string {
  const reported = devices
    .map(d => d.memory_total)
    .filter((v): v is number => typeof v === 'number');
  const totals = [...new Set(reported)];
  const of =
    totals.length === 0
      ? ''
      : totals.length === 1
        ? ` of ${formatBytes(totals[0])}${devices.length > 1 ? ' each' : ''}`
        : ` of ${formatBytes(Math.min(...totals))}–${formatBytes(Math.max(...totals))}`;
  return `GPU memory${of} (dashed: held by this cluster)`;
}

/** "GPU 0 85 % · GPU 1 12 %" at index `idx` of the series (null: the latest). */
export function readout<T>(
  titles: string[],
  values: T[][],
  xs: number[],
  idx: number | null,
  format: (v: T | null) => string
): string {
  if (xs.length === 0) {
    return '';
  }
  const i = idx === null || idx < 0 || idx >= xs.length ? xs.length - 1 : idx;
  const when = idx === null ? 'latest' : formatClock(xs[i]);
  const parts = titles.map((title, d) => `${title} ${format(values[d]?.[i] ?? null)}`);
  return `${when}: ${parts.join(' · ')}`;
}

/** uPlot's data: x, then one array per series (null: a gap). */
function aligned(xs: number[], ys: (number | null)[][]): uPlot.AlignedData {
  return [xs, ...ys] as unknown as uPlot.AlignedData;
}

interface Chart {
  plot: uPlot;
  heading: HTMLElement;
  readout: HTMLElement;
}

/** Which line is which GPU: its colour as a short line and its title; the dashes' meaning. */
export function chartKey(devices: DeviceInfo[]): HTMLElement {
  const key = el('div', 'gpudask-chart-key');
  key.setAttribute('aria-label', 'Key of the GPU charts');
  const item = (text: string, color: string, dashed: boolean): HTMLElement => {
    const node = el('span', 'gpudask-legend-item');
    const line = el('span', dashed ? 'gpudask-key-line gpudask-key-dashed' : 'gpudask-key-line');
    line.style.borderTopColor = color;
    line.setAttribute('aria-hidden', 'true');
    node.append(line, document.createTextNode(text));
    return node;
  };
  key.append(...devices.map((d, i) => item(deviceTitle(d), gpuColor(i), false)));
  key.append(item("this cluster's share (memory)", 'currentColor', true));
  return key;
}

export class GpuCharts {
  readonly node = el('section', 'gpudask-gpu-charts');
  private util: Chart | null = null;
  private memory: Chart | null = null;
  private signature = '';
  private series: GpuSeries = { xs: [], util: [], used: [], cluster: [] };
  private titles: string[] = [];
  private ceiling = 2 ** 30;

  constructor(private readonly parts: ChartParts) {
    this.node.setAttribute('aria-label', 'GPU utilisation and memory over time');
  }

  /** Redraw for `devices` at `width` CSS px; returns the number of GPU lines drawn. */
  update(state: ViewState, devices: DeviceInfo[], width: number): number {
    this.node.hidden = devices.length === 0;
    if (devices.length === 0) {
      this.destroy();
      return 0;
    }
    const range = this.parts.range();
    this.series = gpuSeries(state, devices, range);
    this.titles = devices.map(deviceTitle);
    this.ceiling = memoryCeiling(devices, this.series);
    // the text's size is fixed when a chart is made: a view that grew large makes them again
    const signature = [String(this.parts.large()), ...devices.map(d => d.id)].join('\u0000');
    if (signature !== this.signature || !this.util || !this.memory) {
      this.build(devices, width);
      this.signature = signature;
    }
    if (this.memory) {
      setText(this.memory.heading, memoryTitle(devices));
    }
    for (const chart of [this.util, this.memory]) {
      if (chart && chart.plot.width !== Math.floor(width)) {
        chart.plot.setSize({ width: Math.floor(width), height: CHART_HEIGHT });
      }
    }
    this.util?.plot.setData(aligned(this.series.xs, this.series.util), true);
    this.memory?.plot.setData(
      aligned(this.series.xs, [...this.series.used, ...this.series.cluster]),
      true
    );
    this.showReadouts(null);
    return devices.length;
  }

  destroy(): void {
    this.util?.plot.destroy();
    this.memory?.plot.destroy();
    this.util = this.memory = null;
    this.signature = '';
    this.node.replaceChildren();
  }

  private build(devices: DeviceInfo[], width: number): void {
    this.destroy();
    this.node.append(chartKey(devices));
    const lines = (label: (d: DeviceInfo) => string, dash?: number[]): uPlot.Series[] =>
      devices.map((d, i) => ({
        label: label(d),
        stroke: gpuColor(i),
        width: dash ? 1.25 : 1.75,
        dash,
        spanGaps: false,
        points: { show: false }
      }));
    this.util = this.chart('GPU utilisation (%)', width, lines(deviceTitle), {
      range: () => [0, 100],
      splits: () => [0, 50, 100],
      values: (_u: uPlot, splits: number[]) => splits.map(v => `${v} %`)
    });
    this.memory = this.chart(
      memoryTitle(devices),
      width,
      [...lines(d => `${deviceTitle(d)} used`), ...lines(d => `${deviceTitle(d)} cluster`, [4, 3])],
      {
        range: () => [0, this.ceiling],
        splits: () => [0, this.ceiling / 2, this.ceiling],
        values: (_u: uPlot, splits: number[]) => splits.map(axisBytes)
      }
    );
  }

  private chart(
    title: string,
    width: number,
    series: uPlot.Series[],
    y: { range: () => [number, number]; splits: () => number[]; values: uPlot.Axis.Values }
  ): Chart {
    const box = el('div', 'gpudask-chart');
    const heading = el('div', 'gpudask-chart-title', title);
    const plotHost = el('div', 'gpudask-chart-plot');
    const readoutNode = el('div', 'gpudask-readout');
    markHeld(readoutNode);
    box.append(heading, plotHost, readoutNode);
    this.node.append(box);
    const base = baseOptions(this.parts, Math.floor(width), CHART_HEIGHT);
    const plot = new uPlot(
      {
        ...base,
        scales: { ...base.scales, y: { range: () => y.range() } },
        axes: [
          base.xAxis,
          yAxis(this.parts, {
            scale: 'y',
            values: y.values,
            splits: () => y.splits()
          })
        ],
        series: [{}, ...series],
        hooks: {
          setSelect: [selectHook(this.parts)],
          draw: [boxHook],
          setCursor: [(u: uPlot) => this.showReadouts(u.cursor.idx ?? null)]
        }
      },
      [[]],
      plotHost
    );
    attachPointer(plot, this.parts);
    return { plot, heading, readout: readoutNode };
  }

  private showReadouts(idx: number | null): void {
    const { xs, util, used } = this.series;
    if (this.util) {
      setText(
        this.util.readout,
        readout(this.titles, util, xs, idx, v => formatPercent(v))
      );
    }
    if (this.memory) {
      const { cluster } = this.series;
      // "GPU 0 40 GiB (cluster 30 GiB)" where the cluster's share is known
      const combined = used.map((values, d) =>
        values.map((v, i) => ({ used: v, cluster: cluster[d]?.[i] ?? null }))
      );
      const text = readout(this.titles, combined, xs, idx, pair => {
        if (!pair) {
          return formatBytes(null);
        }
        const share = pair.cluster === null ? '' : ` (cluster ${formatBytes(pair.cluster)})`;
        return `${formatBytes(pair.used)}${share}`;
      });
      setText(this.memory.readout, text);
    }
  }
}
