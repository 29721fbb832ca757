/** One row per device: name, utilisation and memory bars, sensors, and a history canvas. */
import { TimeAxis, samplesInWindow } from './axis';
import { MEMORY_COLOR, UTIL_COLOR, drawGrid, drawSeries, fitCanvas } from './canvas';
import { bar, el, setBar, setText } from './dom';
import { DeviceInfo, DeviceValues, FIELD, Sample, SampleField } from './frame';
import { formatBytes, formatNumber, formatPercent, formatRate, fraction } from './format';
import { ViewState } from './state';

const HISTORY_HEIGHT = 40;

/** The newest values of a device (null when no sample has it yet). */
export function latestValues(samples: Sample[], id: string): DeviceValues | null {
  for (let i = samples.length - 1; i >= 0; i--) {
    const values = samples[i].values[id];
    if (values) {
      return values;
    }
  }
  return null;
}

/** "GPU 0", "MIG 0:1", or a worker's name for a GPU seen through heartbeats. */
export function deviceTitle(device: DeviceInfo): string {
  if (device.id.startsWith('worker:')) {
    return device.label;
  }
  return `${device.mig ? 'MIG' : 'GPU'} ${device.label}`;
}

function value(values: DeviceValues | null, field: SampleField): number | null {
  const v = values?.[FIELD[field]];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

class DeviceRow {
  readonly node = el('div', 'gpudask-device gpudask-row');
  private readonly title = el('div', 'gpudask-device-title');
  private readonly name = el('div', 'gpudask-device-name');
  private readonly sensors = el('div', 'gpudask-device-sensors');
  private readonly util = bar('gpudask-util');
  private readonly memory = bar('gpudask-memory');
  readonly canvas = el('canvas', 'gpudask-history');

  constructor() {
    const gutter = el('div', 'gpudask-gutter');
    gutter.append(this.title, this.name, this.sensors);
    const plot = el('div', 'gpudask-plot');
    const bars = el('div', 'gpudask-bars');
    bars.append(this.util, this.memory);
    plot.append(bars, this.canvas);
    this.node.append(gutter, plot);
  }

  update(device: DeviceInfo, state: ViewState, axis: TimeAxis): void {
    const values = latestValues(state.samples, device.id);
    setText(this.title, deviceTitle(device));
    setText(this.name, device.host ? `${device.name} on ${device.host}` : device.name);
    this.name.title = this.name.textContent ?? '';

    const util = value(values, 'utilization');
    setBar(this.util, util === null ? null : util / 100, `util ${formatPercent(util)}`);
    const used = value(values, 'memory_used');
    setBar(
      this.memory,
      fraction(used, device.memory_total),
      `mem ${formatBytes(used)} / ${formatBytes(device.memory_total)}`
    );

    const sensors = [formatNumber(value(values, 'temperature'), '°C')];
    const power = formatNumber(value(values, 'power'), 'W');
    sensors.push(
      device.power_limit ? `${power} / ${formatNumber(device.power_limit, 'W')}` : power
    );
    const tx = value(values, 'pcie_tx');
    const rx = value(values, 'pcie_rx');
    if (tx !== null || rx !== null) {
      sensors.push(`PCIe tx ${formatRate(tx)} · rx ${formatRate(rx)}`);
    }
    setText(this.sensors, sensors.join(' · '));

    this.drawHistory(device, state, axis);
  }

  private drawHistory(device: DeviceInfo, state: ViewState, axis: TimeAxis): void {
    const ctx = fitCanvas(this.canvas, axis.width, HISTORY_HEIGHT);
    if (!ctx) {
      return;
    }
    drawGrid(ctx, axis.width, HISTORY_HEIGHT);
    const samples = samplesInWindow(state.samples, axis).filter(s => s.values[device.id]);
    const series = (get: (v: DeviceValues) => number | null): [number, number | null][] =>
      samples.map(s => [s.t, get(s.values[device.id])]);
    drawSeries(
      ctx,
      axis,
      HISTORY_HEIGHT,
      series(v => fraction(value(v, 'memory_used'), device.memory_total)),
      MEMORY_COLOR
    );
    drawSeries(
      ctx,
      axis,
      HISTORY_HEIGHT,
      series(v => {
        const u = value(v, 'utilization');
        return u === null ? null : Math.min(1, Math.max(0, u / 100));
      }),
      UTIL_COLOR
    );
  }
}

export class DevicesSection {
  readonly node = el('div', 'gpudask-devices');
  private rows = new Map<string, DeviceRow>();

  /** Redraw; returns the number of device rows. */
  update(state: ViewState, axis: TimeAxis): number {
    const next = new Map<string, DeviceRow>();
    for (const device of state.devices) {
      const row = this.rows.get(device.id) ?? next.get(device.id) ?? new DeviceRow();
      next.set(device.id, row);
      row.update(device, state, axis);
    }
    const order = [...next.values()].map(row => row.node);
    const same =
      order.length === this.node.children.length &&
      order.every((node, i) => this.node.children[i] === node);
    if (!same) {
      this.node.replaceChildren(...order);
    }
    this.rows = next;
    return next.size;
  }
}
