/**
 * The cluster actions of one view: the state machine, its bar, and the host that runs them in
 * the kernel (the widget's comm, or the sidebar's kernel execution). While an action is under
 * way the view repaints every second, so its elapsed time moves.
 */
import { ActionMachine, ActionName, ActionResult, offers } from './actions';
import { ActionBar } from './actionbar';
import { ClusterInfo } from './frame';

export interface ActionHost {
  /** Run `action` in the kernel; answer with the view's actionStarted / actionFinished. */
  run(id: number, action: ActionName, n: number | null): void;
}

export class ClusterActions {
  readonly machine: ActionMachine;
  readonly bar: ActionBar;
  private host: ActionHost | null = null;
  private hasKernel = false;
  private ticker: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly repaint: () => void,
    private readonly onDone: (action: ActionName, result: ActionResult) => void,
    signal: AbortSignal,
    now?: () => number
  ) {
    this.machine = new ActionMachine(now);
    this.bar = new ActionBar((action, n) => this.request(action, n), signal);
    signal.addEventListener('abort', () => this.stopTicker());
  }

  /** Who runs the actions (null: no actions, the bar is hidden) and whether a kernel is there. */
  setHost(host: ActionHost | null, hasKernel: boolean): void {
    this.host = host;
    this.hasKernel = hasKernel;
    this.repaint();
  }

  started(id: number): void {
    if (this.machine.started(id)) {
      this.repaint();
    }
  }

  finished(id: number, result: ActionResult): void {
    const phase = this.machine.phase;
    if (this.machine.finish(id, result) && phase.kind !== 'idle' && phase.kind !== 'done') {
      this.stopTicker();
      this.repaint();
      this.onDone(phase.action, result);
    }
  }

  abort(why: string): void {
    if (this.machine.busy) {
      this.machine.abort(why);
      this.stopTicker();
      this.repaint();
    }
  }

  /** Draw the bar; `reachable` false (the kernel went away) offers nothing to run. */
  show(cluster: ClusterInfo | null, workers: number, now: number, reachable = true): void {
    const offered = offers(cluster, this.hasKernel && reachable, this.machine.phase);
    if (this.host === null) {
      for (const offer of Object.values(offered)) {
        offer.visible = false;
      }
    }
    this.bar.show(offered, this.machine.phase, now, cluster ? workers : null);
    this.bar.node.hidden = this.host === null;
  }

  private request(action: ActionName, n: number | null): void {
    const id = this.machine.request(action, n);
    if (id === null || this.host === null) {
      return;
    }
    this.ticker ??= setInterval(this.repaint, 1000);
    this.repaint();
    this.host.run(id, action, n);
  }

  private stopTicker(): void {
    if (this.ticker !== null) {
      clearInterval(this.ticker);
      this.ticker = null;
    }
  }
}
