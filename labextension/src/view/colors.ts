/**
 * Task-stream colours. Compute tasks take the Dask dashboard's colour of their prefix (the
 * frame's `color`, from distributed's color_of: a hash into Viridis18), except where two prefixes
 * shown together would get the same or a neighbouring colour: then the later prefix takes the
 * palette colour farthest from those in use. The choice is kept while the prefix has tasks in
 * the view, so colours do not change under the reader's eyes; it depends only on the order in
 * which prefixes appear, so the same frames always give the same colours.
 *
 * Transfers, spilling, deserialisation and errors keep the dashboard's fixed colours and have
 * their own legend entries.
 */
import { safeColor } from './dom';
import { ACTION_COLORS, Action, ERROR_COLOR, TaskRect } from './frame';

export { ACTION_COLORS } from './frame';

/** distributed.utils.palette (bokeh's Viridis18), the palette color_of hashes into. */
export const DASK_PALETTE = [
  '#440154',
  '#471669',
  '#472A79',
  '#433C84',
  '#3C4D8A',
  '#355D8C',
  '#2E6C8E',
  '#287A8E',
  '#23898D',
  '#1E978A',
  '#20A585',
  '#2EB27C',
  '#45BF6F',
  '#64CB5D',
  '#88D547',
  '#AFDC2E',
  '#D7E219',
  '#FDE724'
];

/** Palette indices closer than this count as the same colour to a reader. */
export const MIN_GAP = 2;

/** A failed task's fill is the kernel's (ERROR_COLOR); its outline only the view draws. */
export const ERROR_FILL = ERROR_COLOR;
export const ERROR_OUTLINE = '#e53935';

export interface LegendEntry {
  label: string;
  color: string;
  /** Drawn with the error outline. */
  error?: boolean;
}

/** What the non-compute marks mean; "spill" covers both disk actions. */
export const ACTION_LEGEND: Record<Exclude<Action, 'compute'>, string> = {
  transfer: 'transfer between workers',
  'disk-read': 'spill: read from disk',
  'disk-write': 'spill: write to disk',
  deserialize: 'deserialise'
};

function paletteIndex(color: string): number {
  return DASK_PALETTE.indexOf(color.toUpperCase());
}

/** The smallest palette distance from `index` to any of `used` (Infinity when none). */
function gap(index: number, used: number[]): number {
  return used.reduce((best, u) => Math.min(best, Math.abs(index - u)), Infinity);
}

/**
 * The colour for a new prefix whose preferred colour is `preferred`, given the colours of the
 * prefixes already shown. Deterministic: same inputs, same answer.
 */
export function pickColor(preferred: string, inUse: string[]): string {
  const used = inUse.map(paletteIndex).filter(i => i >= 0);
  const wanted = paletteIndex(preferred);
  if (wanted < 0) {
    // not a palette colour (another distributed version): keep it unless exactly taken
    if (!inUse.some(c => c.toUpperCase() === preferred.toUpperCase())) {
      return preferred;
    }
  } else if (gap(wanted, used) >= MIN_GAP) {
    return DASK_PALETTE[wanted];
  }
  const origin = Math.max(0, wanted);
  let best = -1;
  let bestScore = -1;
  for (let i = 0; i < DASK_PALETTE.length; i++) {
    if (used.includes(i)) {
      continue;
    }
    // far enough counts as good as any; among equals, the nearest to the preferred colour
    const score = Math.min(gap(i, used), MIN_GAP + 1);
    const nearer = best < 0 || Math.abs(i - origin) < Math.abs(best - origin);
    if (score > bestScore || (score === bestScore && nearer)) {
      best = i;
      bestScore = score;
    }
  }
  return best < 0 ? preferred : DASK_PALETTE[best];
}

/** Compute prefixes of `rects` with their frame colour, in order of first start. */
export function prefixesByAppearance(rects: TaskRect[]): [string, string][] {
  const first = new Map<string, TaskRect>();
  for (const rect of rects) {
    if (rect.action !== 'compute' || rect.error) {
      continue;
    }
    const seen = first.get(rect.prefix);
    if (!seen || rect.start < seen.start || (rect.start === seen.start && rect.key < seen.key)) {
      first.set(rect.prefix, rect);
    }
  }
  return [...first.values()]
    .sort((a, b) => a.start - b.start || (a.prefix < b.prefix ? -1 : 1))
    .map(r => [r.prefix, safeColor(r.color)]);
}

/** The prefix colours of one view: kept while their prefix has tasks, assigned on first sight. */
export class PrefixColors {
  private assigned = new Map<string, string>();

  /** Update for the rectangles the view holds; returns prefix -> colour. */
  update(rects: TaskRect[]): ReadonlyMap<string, string> {
    const present = prefixesByAppearance(rects);
    const names = new Set(present.map(([prefix]) => prefix));
    for (const prefix of [...this.assigned.keys()]) {
      if (!names.has(prefix)) {
        this.assigned.delete(prefix);
      }
    }
    for (const [prefix, preferred] of present) {
      if (!this.assigned.has(prefix)) {
        this.assigned.set(prefix, pickColor(preferred, [...this.assigned.values()]));
      }
    }
    return this.assigned;
  }

  reset(): void {
    this.assigned.clear();
  }
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
