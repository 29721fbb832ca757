/**
 * The workers: a table in a wide view, one card per worker below COMPACT_WIDTH so that nothing
 * is scrolled sideways in a sidebar. Counts as numbers, host and GPU memory as bars; a column
 * whose every value is unknown is left out; workers that are not this kernel's are marked.
 */
import { bar, el, setBar } from './dom';
import { WORKER_COUNTS, WorkerInfo } from './frame';
import { formatBytes, formatPercent, fraction } from './format';
import { workerLabel } from './names';

export const COMPACT_WIDTH = 320;
/** The width a table column needs at least, CSS px: a narrower view gets cards. */
export const COLUMN_WIDTH = 78;
export const OTHERS = "others'";

export type WorkerLayout = 'table' | 'cards';

/** Cards below COMPACT_WIDTH, or where the table's columns would not fit the width. */
export function workerLayout(width: number, columns = COLUMNS.length): WorkerLayout {
  return width > 0 && width < Math.max(COMPACT_WIDTH, columns * COLUMN_WIDTH) ? 'cards' : 'table';
}

interface Column {
  heading: string;
  /** Null: unknown ("–"), which hides the column when every worker has it. */
  cell: (w: WorkerInfo) => Cell | null;
}

type Cell = { text: string } | { text: string; fraction: number | null };

function memoryCell(used: number | null, total: number | null): Cell | null {
  if (used === null && !total) {
    return null;
  }
  const text = total ? `${formatBytes(used)} / ${formatBytes(total)}` : formatBytes(used);
  return { text, fraction: fraction(used, total) };
}

/** A count's word as a column heading: "Results held". */
function heading(word: string): string {
  return word[0].toUpperCase() + word.slice(1);
}

export const COLUMNS: Column[] = [
  { heading: 'Worker', cell: w => ({ text: w.name ? workerLabel(w.name) : w.address }) },
  { heading: 'Host', cell: w => (w.host ? { text: w.host } : null) },
  { heading: 'GPU', cell: w => (w.gpu?.name ? { text: w.gpu.name } : null) },
  {
    heading: 'GPU util',
    cell: w =>
      w.gpu && w.gpu.utilization !== null
        ? { text: formatPercent(w.gpu.utilization), fraction: w.gpu.utilization / 100 }
        : null
  },
  {
    heading: 'GPU memory',
    cell: w => (w.gpu ? memoryCell(w.gpu.memory_used, w.gpu.memory_total) : null)
  },
  { heading: 'Host memory', cell: w => memoryCell(w.memory, w.memory_limit) },
  { heading: heading(WORKER_COUNTS.executing), cell: w => ({ text: String(w.executing) }) },
  { heading: heading(WORKER_COUNTS.ready), cell: w => ({ text: String(w.ready) }) },
  { heading: heading(WORKER_COUNTS.in_memory), cell: w => ({ text: String(w.in_memory) }) }
];

/** The columns with at least one known value among `workers`. */
export function visibleColumns(workers: WorkerInfo[]): Column[] {
  return COLUMNS.filter(c => workers.some(w => c.cell(w) !== null));
}

/** "2 running · 0 ready · 16 results held": the words of WORKER_COUNTS, as everywhere. */
export function countsText(w: WorkerInfo): string {
  return (Object.keys(WORKER_COUNTS) as (keyof typeof WORKER_COUNTS)[])
    .map(key => `${w[key]} ${WORKER_COUNTS[key]}`)
    .join(' · ');
}

function cellNode(tag: 'td' | 'div', cell: Cell | null, label?: string): HTMLElement {
  const node = el(tag, 'gpudask-cell');
  if (cell === null) {
    node.textContent = '–';
    return node;
  }
  if ('fraction' in cell) {
    const track = bar('gpudask-worker-bar');
    setBar(track, cell.fraction, label ? `${label} ${cell.text}` : cell.text);
    node.append(track);
  } else {
    node.textContent = cell.text;
  }
  return node;
}

function nameNode(tag: 'td' | 'div', w: WorkerInfo): HTMLElement {
  const node = el(tag, 'gpudask-worker-name');
  node.append(document.createTextNode(w.name ? workerLabel(w.name) : w.address));
  if (!w.ours) {
    const mark = el('span', 'gpudask-badge', OTHERS);
    mark.title = 'Not started by this kernel: another client attached or joined these workers.';
    node.append(' ', mark);
  }
  node.title = w.address;
  return node;
}

/** The worker's address and counts as data attributes (what tests compare with the scheduler). */
function tag(node: HTMLElement, w: WorkerInfo): HTMLElement {
  node.dataset.address = w.address;
  node.dataset.executing = String(w.executing);
  node.dataset.ready = String(w.ready);
  node.dataset.inMemory = String(w.in_memory);
  return node;
}

function tableOf(workers: WorkerInfo[]): HTMLTableElement {
  const columns = visibleColumns(workers);
  const table = el('table', 'gpudask-worker-table');
  const head = el('tr');
  head.append(...columns.map(c => el('th', undefined, c.heading)));
  const body = el('tbody');
  body.append(
    ...workers.map(w => {
      const row = tag(el('tr', 'gpudask-worker'), w);
      row.append(
        ...columns.map(c =>
          c.heading === 'Worker' ? nameNode('td', w) : cellNode('td', c.cell(w))
        )
      );
      return row;
    })
  );
  const thead = el('thead');
  thead.append(head);
  table.append(thead, body);
  return table;
}

function cardOf(w: WorkerInfo): HTMLElement {
  const card = tag(el('div', 'gpudask-worker gpudask-worker-card'), w);
  const host = w.host ? ` · ${w.host}` : '';
  const title = nameNode('div', w);
  title.append(el('span', 'gpudask-muted', host));
  card.append(title, el('div', 'gpudask-worker-counts', countsText(w)));
  const hostMemory = memoryCell(w.memory, w.memory_limit);
  if (hostMemory) {
    card.append(cellNode('div', hostMemory, 'host'));
  }
  const gpu = w.gpu ? memoryCell(w.gpu.memory_used, w.gpu.memory_total) : null;
  if (w.gpu && gpu) {
    const util = w.gpu.utilization === null ? '' : ` · ${formatPercent(w.gpu.utilization)}`;
    card.append(cellNode('div', gpu, `GPU${util}`));
  }
  return card;
}

export class WorkersSection {
  readonly node = el('section', 'gpudask-workers');
  private readonly heading = el('h3', 'gpudask-section-title', 'Workers');
  private readonly body = el('div');

  constructor() {
    this.node.setAttribute('aria-label', 'Workers');
    this.node.append(this.heading, this.body);
  }

  update(workers: WorkerInfo[], width: number): WorkerLayout {
    this.node.hidden = workers.length === 0;
    const layout = workerLayout(width, visibleColumns(workers).length);
    this.node.dataset.layout = layout;
    const n = workers.length;
    this.heading.textContent = `Workers (${n})`;
    this.body.replaceChildren(
      ...(layout === 'cards' ? workers.map(cardOf) : workers.length ? [tableOf(workers)] : [])
    );
    return layout;
  }
}
