/**
 * Progress per task prefix: a done/total bar with the running, waiting and failed counts,
 * readable names in the task stream's colours; what is under way first, at most MAX_ROWS rows.
 * "Running" is what the workers said they run (never more than their threads); the rest of what
 * the scheduler gave them waits there for a thread, and is said so.
 */
import { bar, el, prefixName, setBar } from './dom';
import { PrefixProgress } from './frame';

export const MAX_ROWS = 10;

/** Running or failed first, then unfinished, then finished; otherwise the frame's order. */
export function progressOrder(progress: PrefixProgress[]): PrefixProgress[] {
  const rank = (p: PrefixProgress): number =>
    p.processing > 0 || p.erred > 0 ? 0 : p.done < p.total ? 1 : 2;
  return progress
    .map((p, i) => ({ p, i }))
    .sort((a, b) => rank(a.p) - rank(b.p) || a.i - b.i)
    .map(({ p }) => p);
}

/** "12 / 32 · 4 running · 6 waiting · 1 failed". */
export function progressCaption(p: PrefixProgress): string {
  const parts = [`${p.done} / ${p.total}`];
  const running = Math.min(p.running, p.processing);
  if (running > 0) {
    parts.push(`${running} running`);
  }
  if (p.processing > running) {
    parts.push(`${p.processing - running} waiting`);
  }
  if (p.erred > 0) {
    parts.push(`${p.erred} failed`);
  }
  return parts.join(' · ');
}

function progressRow(p: PrefixProgress, color: string | undefined): HTMLElement {
  const row = el(
    'div',
    p.erred > 0 ? 'gpudask-progress-row gpudask-has-errors' : 'gpudask-progress-row'
  );
  const name = prefixName(p.prefix, color);
  const done = bar('gpudask-done', 2);
  const failed = p.total > 0 ? p.erred / p.total : null;
  setBar(done, [p.total > 0 ? p.done / p.total : null, failed], progressCaption(p));
  row.append(name, done);
  return row;
}

export class ProgressSection {
  readonly node = el('section', 'gpudask-progress');

  constructor() {
    this.node.setAttribute('aria-label', 'Progress by task prefix');
  }

  update(progress: PrefixProgress[], colors: ReadonlyMap<string, string>): void {
    this.node.hidden = progress.length === 0;
    const ordered = progressOrder(progress);
    const shown = ordered.slice(0, MAX_ROWS);
    const rest = ordered.length - shown.length;
    const rows = shown.map(p => progressRow(p, colors.get(p.prefix)));
    if (rest > 0) {
      rows.push(el('div', 'gpudask-muted', `and ${rest} more prefix${rest === 1 ? '' : 'es'}`));
    }
    this.node.replaceChildren(el('h3', 'gpudask-section-title', 'Progress'), ...rows);
  }
}
