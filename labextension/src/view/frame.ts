/**
 * The Frame: what the panel widget and the sidebar draw.
 *
 * Its types and constants (VERSION, SAMPLE_FIELDS, the interval and history ranges and
 * defaults) are generated from gpudask_jupyter/schema/frame.py into frame.generated.ts; this module
 * re-exports them and adds only what the view needs on top. Times are seconds since the epoch
 * on the monitoring host's clock.
 */
import {
  DEFAULT_HISTORY,
  DEFAULT_INTERVAL,
  DeviceValues,
  HISTORY_RANGE,
  INTERVAL_RANGE,
  SAMPLE_FIELDS
} from './frame.generated';

export * from './frame.generated';

export type SampleField = (typeof SAMPLE_FIELDS)[number];

/** Index of each field in Sample.values[device]. */
export const FIELD = Object.fromEntries(
  SAMPLE_FIELDS.map((name, index) => [name, index])
) as Record<SampleField, number>;

/** A device's values from named readings (null where not given), in SAMPLE_FIELDS order. */
export function deviceValues(reading: Partial<Record<SampleField, number | null>>): DeviceValues {
  return SAMPLE_FIELDS.map(name => reading[name] ?? null) as DeviceValues;
}

function clamp(value: number, [low, high]: readonly [number, number], fallback: number): number {
  const n = Number(value);
  if (!Number.isFinite(n)) {
    return fallback;
  }
  return Math.min(high, Math.max(low, n));
}

/** Seconds between frames, as frame.py's clamp_interval (not a number: the default). */
export function clampInterval(seconds: number): number {
  return clamp(seconds, INTERVAL_RANGE, DEFAULT_INTERVAL);
}

/** Seconds of history shown, as frame.py's clamp_history (not a number: the default). */
export function clampHistory(seconds: number): number {
  return clamp(seconds, HISTORY_RANGE, DEFAULT_HISTORY);
}
