/** Numbers in words, as gpudask_jupyter/units.py writes them (binary units, 3 figures). */

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

export function formatClock(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toLocaleTimeString();
}
