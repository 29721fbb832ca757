/**
 * The task stream's legend (prefix colours, then transfer, spill, deserialisation and errors in
 * their own colours) and "Recent work": what ran in the window, by prefix, in words.
 *
 * Both rank by the time the tasks took, not by how recently they ran: the reader asks what took
 * the time, and a one-task reduction that finished last must not push a long load out of view.
 * What does not fit is counted ("and 3 more"), its names in the tooltip, so the legend covers
 * every colour drawn.
 */
import { LegendEntry, actionLegend } from './colors';
import { el, safeColor } from './dom';
import { OTHER_COLOR, PALETTE, TaskRect } from './frame';
import { formatSeconds } from './format';
import { readablePrefix } from './names';

/** As many as the palette has colours: every colour drawn is named. */
export const MAX_PREFIXES = PALETTE.length;
export const RECENT_ROWS = 8;

/** Compute prefixes with their colour, the one whose tasks took the most time first. */
export function legendPrefixes(
  rects: TaskRect[],
  colors: ReadonlyMap<string, string>
): LegendEntry[] {
  const busy = new Map<string, number>();
  for (const rect of rects) {
    if (rect.action === 'compute' && !rect.error) {
      busy.set(rect.prefix, (busy.get(rect.prefix) ?? 0) + Math.max(0, rect.stop - rect.start));
    }
  }
  const ranked = [...busy.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const entries: LegendEntry[] = [];
  const others: string[] = [];
  for (const [prefix] of ranked) {
    const color = colors.get(prefix) ?? '#888888';
    if (color === OTHER_COLOR) {
      others.push(prefix);
    } else {
      entries.push({ label: prefix, color });
    }
  }
  if (others.length > 0) {
    // one entry for every prefix beyond the palette: one colour, one name
    entries.push({
      label: others.length === 1 ? `other: ${others[0]}` : `other (${others.length} prefixes)`,
      color: OTHER_COLOR,
      title: others.join(', ')
    });
  }
  return entries;
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

/** What ran among `rects`, by prefix (compute) or action (the rest), the longest in all first. */
export function recentWork(rects: TaskRect[], colors: ReadonlyMap<string, string>): RecentRow[] {
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
  return [...groups.values()].sort(
    (a, b) => b.busy - a.busy || b.lastStop - a.lastStop || (a.name < b.name ? -1 : 1)
  );
}

/** "16 tasks · 834 ms in all · 52.1 ms each · 2 failed". */
export function recentText(row: RecentRow): string {
  const noun = row.count === 1 ? 'task' : 'tasks';
  const each = formatSeconds(row.busy / Math.max(1, row.count));
  const failed = row.errors > 0 ? ` · ${row.errors} failed` : '';
  const total = row.count > 1 ? ` · ${formatSeconds(row.busy)} in all` : '';
  return `${row.count} ${noun}${total} · ${each} each${failed}`;
}

/** "and 3 more" for what a list leaves out, its names in `title`; null when nothing is. */
function moreItem(names: string[], className: string): HTMLElement | null {
  if (names.length === 0) {
    return null;
  }
  const node = el('span', className, `and ${names.length} more`);
  node.title = names.join(', ');
  return node;
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
      node.title = entry.title ?? entry.label;
      node.append(swatch(entry.color, entry.error), document.createTextNode(name));
      return node;
    };
    const all = legendPrefixes(rects, colors);
    // every colour drawn is named: the palette's, and "other" for the prefixes beyond it
    const shown = MAX_PREFIXES + (all.some(e => e.color === OTHER_COLOR) ? 1 : 0);
    const prefixes = all
      .slice(0, shown)
      .map(e => item(e, e.title === undefined ? readablePrefix(e.label) : e.label));
    const more = moreItem(
      all.slice(shown).map(e => readablePrefix(e.label)),
      'gpudask-legend-item gpudask-muted'
    );
    const actions = actionLegend(rects).map(e => item(e, e.label));
    const fixed = el('div', 'gpudask-legend-actions');
    fixed.append(...actions);
    const named = el('div', 'gpudask-legend-prefixes');
    named.append(...prefixes, ...(more ? [more] : []));
    this.node.replaceChildren(named, fixed);
  }
}

export class RecentWork {
  readonly node = el('section', 'gpudask-recent');

  constructor() {
    this.node.setAttribute('aria-label', 'Recent work by task prefix');
  }

  update(rects: TaskRect[], colors: ReadonlyMap<string, string>): void {
    const all = recentWork(rects, colors);
    const rows = all.slice(0, RECENT_ROWS);
    this.node.hidden = rows.length === 0;
    const title = el('h3', 'gpudask-section-title', 'Recent work (in the window), longest first');
    const more = moreItem(
      all.slice(RECENT_ROWS).map(row => row.name),
      'gpudask-recent-row gpudask-muted'
    );
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
      }),
      ...(more ? [more] : [])
    );
  }
}
