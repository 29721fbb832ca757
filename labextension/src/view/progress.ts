/** Progress per task prefix: a done/total bar, processing and erred counts (erred in red). */
import { bar, el, setBar } from './dom';
import { PrefixProgress } from './frame';

function progressRow(p: PrefixProgress): HTMLElement {
  const row = el('div', 'gpudask-progress-row');
  const done = bar('gpudask-done');
  setBar(done, p.total > 0 ? p.done / p.total : null, `${p.done} / ${p.total}`);
  const counts = el('span', 'gpudask-counts');
  counts.append(el('span', undefined, `${p.processing} processing`));
  if (p.erred > 0) {
    counts.append(el('span', 'gpudask-erred', `${p.erred} erred`));
  }
  const name = el('span', 'gpudask-prefix', p.prefix);
  name.title = p.prefix;
  row.append(name, done, counts);
  return row;
}

export class ProgressSection {
  readonly node = el('div', 'gpudask-progress');

  update(progress: PrefixProgress[]): void {
    this.node.hidden = progress.length === 0;
    this.node.replaceChildren(...progress.map(progressRow));
  }
}
