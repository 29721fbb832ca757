/**
 * The task stream's legend (prefix colours, then transfer, spill, deserialisation and errors in
 * their own colours) and "Recent work": what ran in the window, by prefix, in words.
 */
import { LegendEntry, actionLegend } from './colors';
import { el, safeColor } from './dom';
import { TaskRect } from './frame';
import { formatSeconds } from './format';
import { readablePrefix } from './names';

export const MAX_PREFIXES = 12;
export const RECENT_ROWS = 6;

/** Compute prefixes with their colour, the most recently active first. */
export function legendPrefixes(
  rects: TaskRect[],
  colors: ReadonlyMap<string, string>
): LegendEntry[] {
  const newest = new Map<string, number>();
  for (const rect of rects) {
    if (rect.action === 'compute' && !rect.error) {
      newest.set(rect.prefix, Math.max(newest.get(rect.prefix) ?? -Infinity, rect.stop));
    }
  }
  return [...newest.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, MAX_PREFIXES)
    .map(([prefix]) => ({ label: prefix, color: colors.get(prefix) ?? '#888888' }));
}

export interface RecentRow {
  /** The prefix, or the action for transfers, spilling and deserialisation. */
  name: string;
  color: string;
  count: number;
  errors: number;
  /** Seconds, summed over the tasks. */
  busy: number;
  lastStop: number;
}

/** What ran among `rects`, by prefix (compute) or action (the rest), the latest first. */
export function recentWork(
  rects: TaskRect[],
  colors: ReadonlyMap<string, string>,
  rows = RECENT_ROWS
): RecentRow[] {
  const groups = new Map<string, RecentRow>();
  for (const rect of rects) {
    const name = rect.action === 'compute' ? readablePrefix(rect.prefix) : rect.action;
    let row = groups.get(name);
    if (!row) {
      const color =
        rect.action === 'compute'
          ? (colors.get(rect.prefix) ?? safeColor(rect.color))
          : safeColor(rect.color);
      row = { name, color, count: 0, errors: 0, busy: 0, lastStop: -Infinity };
      groups.set(name, row);
    }
    row.count += 1;
    row.errors += rect.error ? 1 : 0;
    row.busy += Math.max(0, rect.stop - rect.start);
    row.lastStop = Math.max(row.lastStop, rect.stop);
  }
  return [...groups.values()]
    .sort((a, b) => b.lastStop - a.lastStop || (a.name < b.name ? -1 : 1))
    .slice(0, rows);
}

/** "16 tasks · 52.1 ms each · 2 failed". */
export function recentText(row: RecentRow): string {
  const noun = row.count === 1 ? 'task' : 'tasks';
  const each = formatSeconds(row.busy / Math.max(1, row.count));
  const failed = row.errors > 0 ? ` · ${row.errors} failed` : '';
  return `${row.count} ${noun} · ${each} each${failed}`;
}

function swatch(color: string, error = false): HTMLElement {
  const node = el('span', error ? 'gpudask-swatch gpudask-swatch-error' : 'gpudask-swatch');
  node.style.backgroundColor = safeColor(color);
  node.setAttribute('aria-hidden', 'true');
  return node;
}

export class Legend {
  readonly node = el('div', 'gpudask-legend');

  update(rects: TaskRect[], colors: ReadonlyMap<string, string>): void {
    const item = (entry: LegendEntry, name: string): HTMLElement => {
      const node = el('span', 'gpudask-legend-item');
      node.title = entry.label;
      node.append(swatch(entry.color, entry.error), document.createTextNode(name));
      return node;
    };
    const prefixes = legendPrefixes(rects, colors).map(e => item(e, readablePrefix(e.label)));
    const actions = actionLegend(rects).map(e => item(e, e.label));
    const fixed = el('div', 'gpudask-legend-actions');
    fixed.append(...actions);
    const named = el('div', 'gpudask-legend-prefixes');
    named.append(...prefixes);
    this.node.replaceChildren(named, fixed);
  }
}

export class RecentWork {
  readonly node = el('section', 'gpudask-recent');

  constructor() {
    this.node.setAttribute('aria-label', 'Recent work by task prefix');
  }

  update(rects: TaskRect[], colors: ReadonlyMap<string, string>): void {
    const rows = recentWork(rects, colors);
    this.node.hidden = rows.length === 0;
    const title = el('h3', 'gpudask-section-title', 'Recent work (in the window)');
    this.node.replaceChildren(
      title,
      ...rows.map(row => {
        const line = el('div', 'gpudask-recent-row');
        const name = el('span', 'gpudask-prefix');
        name.append(swatch(row.color), document.createTextNode(row.name));
        name.title = row.name;
        line.append(name, el('span', 'gpudask-recent-facts', recentText(row)));
        if (row.errors === row.count) {
          name.firstElementChild?.classList.add('gpudask-swatch-error'); // only failures: black
        }
        return line;
      })
    );
  }
}
