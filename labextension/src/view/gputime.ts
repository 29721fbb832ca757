/**
 * "GPU time": where the GPU's time went per task prefix in the window, from the workers'
 * GPU-time plugin (the frame's `gpu_time`). Per prefix: the share of its tasks' wall time the GPU
 * worked for them (a bar and a percentage: what reads from the back of a room), GPU seconds of
 * wall seconds, the memory peak above the tasks' start and the bytes over the bus. The line under
 * the title says how the workers measure (CUPTI, NVML samples and their resolution); the
 * section hides when there is no cluster, or no worker of it measures (no GPU).
 */
import { el, prefixName, safeColor } from './dom';
import { GpuTime, GpuTimeRow } from './frame';
import { formatBytes, formatSeconds } from './format';

export const GPU_TIME_ROWS = 8;

/** "2.4 s GPU of 3.1 s · peak 1.2 GiB · 512 MiB to GPU · 64 MiB back · 4 tasks". */
export function gpuTimeText(row: GpuTimeRow): string {
  const parts = [
    row.gpu > 0
      ? `${formatSeconds(row.gpu)} GPU of ${formatSeconds(row.wall)}`
      : `no GPU time in ${formatSeconds(row.wall)}`
  ];
  if (row.peak !== null && row.peak > 0) {
    parts.push(`peak ${formatBytes(row.peak)}`);
  }
  if (row.htod > 0) {
    parts.push(`${formatBytes(row.htod)} to GPU`);
  }
  if (row.dtoh > 0) {
    parts.push(`${formatBytes(row.dtoh)} back`);
  }
  const noun = row.tasks === 1 ? 'task' : 'tasks';
  parts.push(`${row.tasks} ${noun}${row.shared ? ', threads shared' : ''}`);
  return parts.join(' · ');
}

/** The GPU's busy share of the tasks' wall time, 0–100 (null: no wall time). */
export function busyPercent(row: GpuTimeRow): number | null {
  return row.wall > 0 ? Math.min(100, (100 * row.gpu) / row.wall) : null;
}

export class GpuTimeSection {
  readonly node = el('section', 'gpudask-gputime');

  constructor() {
    this.node.setAttribute('aria-label', 'GPU time by task prefix');
  }

  update(gpuTime: GpuTime | null): void {
    // no worker measures (a cluster without GPUs): nothing to show, `profile` says why
    this.node.hidden = gpuTime === null || (gpuTime.measuring === 0 && gpuTime.rows.length === 0);
    if (gpuTime === null || this.node.hidden) {
      return;
    }
    const title = el('h3', 'gpudask-section-title', 'GPU time (in the window), most first');
    const source = el('div', 'gpudask-gputime-source gpudask-muted', gpuTime.source);
    const rows = gpuTime.rows.slice(0, GPU_TIME_ROWS).map(row => {
      const line = el('div', 'gpudask-gputime-row');
      const name = prefixName(row.prefix, row.color);
      const percent = busyPercent(row);
      const bar = el('span', 'gpudask-gputime-bar');
      const fill = el('span', 'gpudask-gputime-fill');
      fill.style.width = `${percent ?? 0}%`;
      fill.style.backgroundColor = safeColor(row.color);
      bar.append(fill);
      bar.setAttribute('role', 'img');
      const busy = percent === null ? '–' : `${Math.round(percent)}% busy`;
      bar.setAttribute('aria-label', `GPU ${busy}`);
      line.append(
        name,
        bar,
        el('span', 'gpudask-gputime-busy', busy),
        el('span', 'gpudask-gputime-facts', gpuTimeText(row))
      );
      return line;
    });
    const empty =
      gpuTime.rows.length === 0
        ? [el('div', 'gpudask-muted', 'No task has ended in the window yet.')]
        : [];
    const more =
      gpuTime.rows.length > GPU_TIME_ROWS
        ? [
            el(
              'div',
              'gpudask-muted',
              `and ${gpuTime.rows.length - GPU_TIME_ROWS} more prefixes with less GPU time`
            )
          ]
        : [];
    this.node.replaceChildren(title, source, ...rows, ...empty, ...more);
  }
}
