/**
 * One summary row per GPU: its title in its chart colour, the model, utilisation now, memory now
 * split into this cluster's workers and the rest, and the sensors.
 */
import { bar, el, markHeld, setBar, setChildren, setText } from './dom';
import { DeviceInfo, DeviceValues, FIELD, Sample, SampleField } from './frame';
import { formatBytes, formatNumber, formatPercent, formatRate, fraction } from './format';

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

export function value(values: DeviceValues | null, field: SampleField): number | null {
  const v = values?.[FIELD[field]];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * Memory now as [cluster fraction, others fraction] of the total and its caption. Without the
 * cluster's share (null), all used memory is one segment.
 */
export function memorySplit(
  used: number | null,
  total: number | null,
  cluster: number | null
): { fractions: [number | null, number | null]; caption: string } {
  const all = fraction(used, total);
  const head = `memory ${formatBytes(used)} / ${formatBytes(total)}`;
  if (cluster === null || used === null || all === null) {
    return { fractions: [all, null], caption: head };
  }
  const mine = Math.min(cluster, used);
  const others = used - mine;
  return {
    fractions: [fraction(mine, total), fraction(others, total)],
    caption: `${head} · this cluster ${formatBytes(mine)}, others ${formatBytes(others)}`
  };
}

/** "45 °C · 300 W / 700 W · PCIe ↑ 1 GiB/s ↓ 2 GiB/s" (dashes where not reported). */
export function sensorsText(device: DeviceInfo, values: DeviceValues | null): string {
  const parts = [formatNumber(value(values, 'temperature'), '°C')];
  const power = formatNumber(value(values, 'power'), 'W');
  parts.push(device.power_limit ? `${power} / ${formatNumber(device.power_limit, 'W')}` : power);
  const tx = value(values, 'pcie_tx');
  const rx = value(values, 'pcie_rx');
  if (tx !== null || rx !== null) {
    parts.push(`PCIe out ${formatRate(tx)} · in ${formatRate(rx)}`);
  }
  return parts.join(' · ');
}

class DeviceRow {
  readonly node = el('div', 'gpudask-device');
  private readonly swatch = el('span', 'gpudask-swatch');
  private readonly title = el('span', 'gpudask-device-title');
  private readonly name = el('span', 'gpudask-device-name');
  private readonly sensors = el('div', 'gpudask-device-sensors');
  private readonly util = bar('gpudask-util');
  private readonly memory = bar('gpudask-memory', 2);

  constructor() {
    const head = el('div', 'gpudask-device-head');
    this.swatch.setAttribute('aria-hidden', 'true');
    head.append(this.swatch, this.title, this.name);
    markHeld(this.sensors);
    const bars = el('div', 'gpudask-bars');
    bars.append(this.util, this.memory);
    this.node.append(head, bars, this.sensors);
  }

  update(device: DeviceInfo, samples: Sample[], color: string): void {
    const values = latestValues(samples, device.id);
    this.swatch.style.backgroundColor = color;
    this.node.style.setProperty('--gpudask-device-color', color);
    setText(this.title, deviceTitle(device));
    setText(this.name, device.host ? `${device.name} on ${device.host}` : device.name);
    this.name.title = this.name.textContent ?? '';
    const util = value(values, 'utilization');
    setBar(this.util, util === null ? null : util / 100, `utilisation ${formatPercent(util)}`);
    const split = memorySplit(
      value(values, 'memory_used'),
      device.memory_total,
      device.cluster_memory
    );
    setBar(this.memory, split.fractions, split.caption);
    setText(this.sensors, sensorsText(device, values));
  }
}

export class DevicesSection {
  readonly node = el('section', 'gpudask-devices');
  private rows = new Map<string, DeviceRow>();

  constructor() {
    this.node.setAttribute('aria-label', 'GPUs now');
  }

  /** Redraw; returns the number of device rows. */
  update(devices: DeviceInfo[], samples: Sample[], colorOf: (index: number) => string): number {
    const next = new Map<string, DeviceRow>();
    devices.forEach((device, i) => {
      const row = this.rows.get(device.id) ?? next.get(device.id) ?? new DeviceRow();
      next.set(device.id, row);
      row.update(device, samples, colorOf(i));
    });
    setChildren(
      this.node,
      [...next.values()].map(row => row.node)
    );
    this.rows = next;
    this.node.hidden = next.size === 0;
    return next.size;
  }
}
