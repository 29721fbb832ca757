/** Numbers in words, as gpudask_jupyter/text/units.py writes them (binary units, 3 figures). */

const DASH = '–';

/** Three significant figures without trailing zeros, like Python's "{:.3g}". */
function g3(n: number): string {
  return String(Number(n.toPrecision(3)));
}

const BYTE_UNITS: [string, number][] = [
  ['PiB', 2 ** 50],
  ['TiB', 2 ** 40],
  ['GiB', 2 ** 30],
  ['MiB', 2 ** 20],
  ['KiB', 2 ** 10]
];

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return DASH;
  }
  for (const [unit, size] of BYTE_UNITS) {
    if (Math.abs(n) >= size * 0.95) {
      return `${g3(n / size)} ${unit}`;
    }
  }
  return `${Math.trunc(n)} B`;
}

export function formatRate(bytesPerSecond: number | null | undefined): string {
  const text = formatBytes(bytesPerSecond);
  return text === DASH ? text : `${text}/s`;
}

export function formatPercent(value: number | null | undefined): string {
  return value === null || value === undefined || !Number.isFinite(value)
    ? DASH
    : `${Math.round(value)} %`;
}

export function formatNumber(value: number | null | undefined, unit: string): string {
  return value === null || value === undefined || !Number.isFinite(value)
    ? DASH
    : `${Math.round(value)} ${unit}`;
}

/** "10 s", "5 min", "1 h", "1.5 h". */
export function formatDuration(seconds: number): string {
  if (seconds < 120) {
    return `${g3(seconds)} s`;
  }
  if (seconds < 7200) {
    return `${g3(seconds / 60)} min`;
  }
  return `${g3(seconds / 3600)} h`;
}

/** Fraction used/total in 0..1, or null when unknown. */
export function fraction(
  used: number | null | undefined,
  total: number | null | undefined
): number | null {
  if (used === null || used === undefined || !total || !Number.isFinite(used)) {
    return null;
  }
  return Math.min(1, Math.max(0, used / total));
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** "14:03:07", local time, 24 h (the same on every locale, as the chart axes). */
export function formatClock(epochSeconds: number): string {
  const d = new Date(epochSeconds * 1000);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** "14:03:07.250": a task's start. */
export function formatClockPrecise(epochSeconds: number): string {
  const ms = Math.floor((((epochSeconds % 1) + 1) % 1) * 1000);
  return `${formatClock(epochSeconds)}.${pad(ms, 3)}`;
}

/** A duration: "850 µs", "12.3 ms", "1.25 s", "2 min 5 s", "1 h 2 min". */
export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) {
    return DASH;
  }
  if (seconds < 1e-3) {
    return `${Math.round(seconds * 1e6)} µs`;
  }
  if (seconds < 1) {
    return `${g3(seconds * 1e3)} ms`;
  }
  if (seconds < 60) {
    return `${g3(seconds)} s`;
  }
  const whole = Math.round(seconds);
  if (whole < 3600) {
    return `${Math.floor(whole / 60)} min ${whole % 60} s`;
  }
  const minutes = Math.round(seconds / 60);
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
