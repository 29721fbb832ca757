/**
 * The status line: why there is nothing (or less) to draw, in words. Host messages first (no
 * notebook in focus, a failed request), then refused frames, NVML, the cluster, the monitor.
 */
import { el } from './dom';
import { formatClock } from './format';
import { ViewState } from './state';

export type Level = 'error' | 'warn' | 'info';

export interface StatusLine {
  level: Level;
  text: string;
}

export interface StatusContext {
  /** From the host: e.g. "No notebook in focus.", "Cannot reach the server: …". */
  host: string[];
  paused: boolean;
  /** Shown when a frame has no cluster; null: say nothing (e.g. no kernel to start one in). */
  clusterHint: string | null;
}

export function statusLines(state: ViewState, context: StatusContext): StatusLine[] {
  const lines: StatusLine[] = context.host.map(text => ({ level: 'warn', text }));
  lines.push(...state.errors.map(text => ({ level: 'error' as const, text })));
  if (state.frames === 0) {
    if (lines.length === 0) {
      lines.push({ level: 'info', text: 'Waiting for the first frame…' });
    }
    return lines;
  }
  if (context.paused && state.time !== null) {
    lines.push({ level: 'info', text: `Paused: showing ${formatClock(state.time)}.` });
  }
  if (state.nvml && !state.nvml.available) {
    const reason = state.nvml.reason || 'NVML is not available';
    lines.push({ level: 'warn', text: `No GPU data: ${reason}` });
  }
  const cluster = state.cluster;
  if (cluster === null) {
    if (context.clusterHint) {
      lines.push({ level: 'info', text: context.clusterHint });
    }
  } else if (cluster.state === 'unreachable') {
    const why = cluster.message ? `: ${cluster.message}` : '';
    lines.push({ level: 'error', text: `Cannot reach the scheduler at ${cluster.address}${why}` });
  } else if (cluster.state === 'closed') {
    const why = cluster.message ? `: ${cluster.message}` : '.';
    lines.push({ level: 'warn', text: `The cluster at ${cluster.address} is closed${why}` });
  } else {
    const dashboard = cluster.dashboard ? ` · dashboard ${cluster.dashboard}` : '';
    lines.push({
      level: 'info',
      text: `Cluster (${cluster.mode}) at ${cluster.address}${dashboard}`
    });
  }
  lines.push(...state.messages.map(text => ({ level: 'info' as const, text })));
  return lines;
}

export class MessagesSection {
  readonly node = el('div', 'gpudask-messages');

  update(lines: StatusLine[]): void {
    this.node.replaceChildren(
      ...lines.map(line => el('div', `gpudask-message gpudask-${line.level}`, line.text))
    );
  }
}
