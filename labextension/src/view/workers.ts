/** The workers table: one row per Dask worker with its GPU and host memory. */
import { el } from './dom';
import { WorkerInfo } from './frame';
import { formatBytes, formatPercent } from './format';

const HEADINGS = [
  'Worker',
  'Host',
  'GPU',
  'GPU util',
  'GPU memory',
  'Host memory',
  'Running',
  'Ready',
  'In memory'
];

function memory(used: number | null, total: number | null): string {
  return total ? `${formatBytes(used)} / ${formatBytes(total)}` : formatBytes(used);
}

export function workerCells(w: WorkerInfo): string[] {
  return [
    w.name || w.address,
    w.host,
    w.gpu?.name ?? '–',
    formatPercent(w.gpu?.utilization),
    w.gpu ? memory(w.gpu.memory_used, w.gpu.memory_total) : '–',
    memory(w.memory, w.memory_limit),
    String(w.executing),
    String(w.ready),
    String(w.in_memory)
  ];
}

export class WorkersSection {
  readonly node = el('table', 'gpudask-workers');
  private readonly body = el('tbody');

  constructor() {
    const head = el('thead');
    const row = el('tr');
    row.append(...HEADINGS.map(h => el('th', undefined, h)));
    head.append(row);
    this.node.append(head, this.body);
  }

  update(workers: WorkerInfo[]): void {
    this.node.hidden = workers.length === 0;
    this.body.replaceChildren(
      ...workers.map(w => {
        const row = el('tr');
        row.title = w.address;
        row.append(...workerCells(w).map(text => el('td', undefined, text)));
        return row;
      })
    );
  }
}
