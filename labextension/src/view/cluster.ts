/**
 * The cluster line at the top: its state, mode, address, workers and the dashboard as a link
 * (a new tab, rel="noopener"; only http(s) addresses become links); a stopped cluster says when
 * it stopped and offers Clear for the history kept below.
 */
import { el } from './dom';
import { ClusterInfo } from './frame';
import { formatClock } from './format';

/** The dashboard address if it may be a link (http or https), else null. */
export function safeLink(address: string | null): string | null {
  if (!address) {
    return null;
  }
  try {
    const url = new URL(address);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

export type ClusterLevel = 'ok' | 'warn' | 'error' | 'stopped' | 'none';

/** The line's words and level for `cluster` with `workers` workers. */
export function clusterText(
  cluster: ClusterInfo | null,
  workers: number,
  hint: string | null,
  tasksKept = true
): { text: string; level: ClusterLevel } {
  if (cluster === null) {
    return { text: hint ?? '', level: 'none' };
  }
  const where = `${cluster.address}`;
  const why = cluster.message ? `: ${cluster.message}` : '.';
  switch (cluster.state) {
    case 'connecting':
      return { text: `Connecting to the scheduler at ${where}…`, level: 'warn' };
    case 'unreachable':
      return { text: `Cannot reach the scheduler at ${where}${why}`, level: 'error' };
    case 'closed':
      return { text: `The cluster at ${where} is closed${why}`, level: 'warn' };
    case 'stopped': {
      // an attached cluster is not stopped by a detach, nor a joined one by leaving it
      const at = cluster.stopped_at === null ? '' : ` at ${formatClock(cluster.stopped_at)}`;
      const kept = tasksKept
        ? 'what this view saw of its work is kept below, greyed'
        : 'no task ran on it within the history this view keeps';
      const what =
        cluster.mode === 'attached'
          ? `Detached${at} from the cluster at ${where}, which may still run: ${kept}.`
          : cluster.mode === 'joined'
            ? `Left${at} the cluster at ${where} (this kernel's workers ended; the cluster may ` +
              `still run): ${kept}.`
            : `Cluster stopped${at} (${cluster.mode}, ${where}): ${kept}.`;
      return { text: what, level: 'stopped' };
    }
    default: {
      const count = `${workers} worker${workers === 1 ? '' : 's'}`;
      return { text: `Cluster running (${cluster.mode}), ${count}, at ${where}`, level: 'ok' };
    }
  }
}

export class ClusterLine {
  readonly node = el('div', 'gpudask-cluster');
  private readonly text = el('span', 'gpudask-cluster-text');
  private readonly link = el('a', 'gpudask-dashboard', 'Dashboard');
  private readonly clear = el(
    'button',
    'jp-Button jp-mod-styled gpudask-button gpudask-clear',
    'Clear'
  );
  private key = '';

  constructor(onClear: () => void, signal: AbortSignal) {
    this.link.target = '_blank';
    this.link.rel = 'noopener noreferrer';
    this.clear.type = 'button';
    this.clear.title = 'Forget the stopped cluster and its history.';
    this.clear.addEventListener('click', onClear, { signal });
    this.node.append(this.text, this.link, this.clear);
  }

  update(cluster: ClusterInfo | null, workers: number, hint: string | null, tasks = 1): void {
    const { text, level } = clusterText(cluster, workers, hint, tasks > 0);
    const href = cluster && cluster.state !== 'stopped' ? safeLink(cluster.dashboard) : null;
    const key = `${level}\n${text}\n${href ?? ''}`;
    if (key === this.key) {
      return;
    }
    this.key = key;
    this.node.dataset.level = level;
    this.node.hidden = text === '';
    this.text.textContent = text;
    this.link.hidden = href === null;
    if (href !== null) {
      this.link.href = href;
      this.link.title = `The Dask dashboard: ${href} (opens a new tab)`;
    } else {
      this.link.removeAttribute('href');
    }
    this.clear.hidden = level !== 'stopped';
  }
}
