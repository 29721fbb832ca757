/** GPU processes (shown on request): own processes by pid, others only counted. */
import { el } from './dom';
import { DeviceInfo, NvmlInfo, Processes } from './frame';
import { formatBytes } from './format';
import { deviceTitle } from './devices';

export class ProcessesSection {
  readonly node = el('div', 'gpudask-processes');

  update(
    show: boolean,
    processes: Processes | null,
    devices: DeviceInfo[],
    nvml: NvmlInfo | null
  ): void {
    this.node.hidden = !show;
    if (!show) {
      this.node.replaceChildren();
      return;
    }
    if (nvml && !nvml.available) {
      const why = nvml.reason || 'NVML is not available';
      this.node.replaceChildren(el('div', 'gpudask-muted', `GPU processes: none to list. ${why}`));
      return;
    }
    if (processes === null) {
      const text = nvml ? 'GPU processes: not reported yet.' : 'GPU processes: waiting for data…';
      this.node.replaceChildren(el('div', 'gpudask-muted', text));
      return;
    }
    const titles = new Map(devices.map(d => [d.id, deviceTitle(d)]));
    const lines = processes.own.map(p =>
      el(
        'div',
        'gpudask-process',
        `pid ${p.pid} on ${titles.get(p.device) ?? p.device}: ${formatBytes(p.memory)}`
      )
    );
    if (lines.length === 0) {
      lines.push(el('div', 'gpudask-muted', 'No GPU processes of yours.'));
    }
    if (processes.others > 0) {
      const noun = processes.others === 1 ? 'process' : 'processes';
      lines.push(el('div', 'gpudask-muted', `${processes.others} ${noun} of other users`));
    }
    this.node.replaceChildren(...lines);
  }
}
