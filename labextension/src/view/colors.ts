/**
 * Task-stream colours. A compute task's colour is its prefix's (the frame's `color`): the
 * scheduler keeps a PALETTE slot for each prefix it has run lately, the first one free, so every
 * view of a cluster (the inline panel, Open panel, the sidebar) shows a prefix in the same colour,
 * prefixes that appear one after the other get colours far apart, and no view draws two prefixes
 * in one colour; with every slot taken, a prefix is drawn in OTHER_COLOR and named "other" in the
 * legend. The view only collects them; it chooses none.
 *
 * Transfers, spilling, deserialisation and errors keep the dashboard's fixed colours and have
 * their own legend entries.
 */
import { safeColor } from './dom';
import { ACTION_COLORS, Action, ERROR_COLOR, PrefixProgress, TaskRect } from './frame';

export { ACTION_COLORS } from './frame';

/** A failed task's fill is the kernel's (ERROR_COLOR); its outline only the view draws. */
export const ERROR_FILL = ERROR_COLOR;
export const ERROR_OUTLINE = '#e53935';

export interface LegendEntry {
  label: string;
  color: string;
  /** Drawn with the error outline. */
  error?: boolean;
  /** The tooltip: the prefixes an "other" entry stands for. */
  title?: string;
}

/** What the non-compute marks mean; "spill" covers both disk actions. */
export const ACTION_LEGEND: Record<Exclude<Action, 'compute'>, string> = {
  transfer: 'transfer between workers',
  'disk-read': 'spill: read from disk',
  'disk-write': 'spill: write to disk',
  deserialize: 'deserialise'
};

/** Prefix -> colour, as the frames give them: from the rectangles, else the progress rows. */
export function prefixColors(
  rects: TaskRect[],
  progress: PrefixProgress[] = []
): ReadonlyMap<string, string> {
  const colors = new Map<string, string>();
  for (const rect of rects) {
    if (rect.action === 'compute' && !rect.error && !colors.has(rect.prefix)) {
      colors.set(rect.prefix, safeColor(rect.color));
    }
  }
  for (const row of progress) {
    if (!colors.has(row.prefix)) {
      colors.set(row.prefix, safeColor(row.color));
    }
  }
  return colors;
}

/** The fill of one rectangle: its prefix's colour, the action's, or the error fill. */
export function fillOf(rect: TaskRect, colors: ReadonlyMap<string, string>): string {
  if (rect.error) {
    return ERROR_FILL;
  }
  if (rect.action === 'compute') {
    return colors.get(rect.prefix) ?? safeColor(rect.color);
  }
  return safeColor(rect.color || ACTION_COLORS[rect.action]);
}

/**
 * The legend's fixed entries: every non-compute action and errors, in the colours seen in the
 * frames (the dashboard's when none was seen yet). Spill is one entry for both directions.
 */
export function actionLegend(rects: TaskRect[]): LegendEntry[] {
  const seen = new Map<string, string>();
  for (const rect of rects) {
    if (rect.action !== 'compute' && !rect.error && !seen.has(rect.action)) {
      seen.set(rect.action, safeColor(rect.color));
    }
  }
  const color = (action: Exclude<Action, 'compute'>): string =>
    seen.get(action) ?? ACTION_COLORS[action];
  return [
    { label: 'transfer', color: color('transfer') },
    { label: 'spill (disk)', color: seen.get('disk-read') ?? color('disk-write') },
    { label: 'deserialise', color: color('deserialize') },
    { label: 'error', color: ERROR_FILL, error: true }
  ];
}
