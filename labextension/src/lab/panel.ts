/**
 * A Lumino widget hosting the view for the notebook in focus: its own poller (running only
 * while the widget is visible), the cluster actions run in the focused kernel (runner.ts), and
 * the kernel's liveness (kernelwatch.ts). Used for the sidebar and the main-area panel.
 *
 * Another notebook in focus starts the view afresh; the same notebook whose kernel restarted,
 * died or shut down keeps what it showed, greyed and marked stopped, until a new cluster starts.
 */
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { el } from '../view/dom';
import { Controls, GpuDaskView } from '../view/render';
import type { Focus } from './focus';
import { KernelWatch } from './kernelwatch';
import { FetchFrame, FramePoller } from './poller';
import { KernelActionHost } from './runner';

export const NO_NOTEBOOK = 'No notebook in focus: select a notebook to see its cluster.';
export const NO_KERNEL = 'The notebook in focus has no kernel.';
export const NO_AREA =
  'This application has no area to open a panel in: the sidebar shows the same view.';
export const KERNEL_SHUT_DOWN = 'The kernel shut down: its cluster stopped with it.';
const CLUSTER_HINT =
  'No Dask cluster for this notebook: press Start, or run %gpu_cluster start in it.';

export interface PanelOptions {
  focus: Focus;
  fetchFrame: FetchFrame;
  /** Shows an "Open panel" button that calls this; false (or a promise of it): it could not. */
  openPanel?: () => boolean | void | Promise<boolean | void>;
  /** A title above the buttons (the sidebar has no tab label). */
  heading?: string;
}

export class GpuDaskPanel extends Widget {
  private readonly focus: Focus;
  private readonly view: GpuDaskView;
  private readonly poller: FramePoller;
  private readonly kernelWatch: KernelWatch;
  private readonly actionHost: KernelActionHost;
  private kernelId = '';
  private notebookId = '';
  private requestError: string | null = null;
  private openError: string | null = null;

  constructor(options: PanelOptions) {
    super();
    this.addClass('gpudask-panel');
    this.node.style.overflow = 'auto';
    this.focus = options.focus;

    if (options.heading || options.openPanel) {
      const bar = el('div', 'gpudask-panel-bar');
      if (options.heading) {
        bar.append(el('h2', 'gpudask-heading', options.heading));
      }
      if (options.openPanel) {
        const open = el(
          'button',
          'jp-Button jp-mod-styled gpudask-button gpudask-open',
          'Open panel'
        );
        open.type = 'button';
        open.title = 'Open this view in a larger panel';
        const openPanel = options.openPanel;
        open.addEventListener('click', () => void this.open(openPanel));
        bar.append(open);
      }
      this.node.append(bar);
    }
    const viewHost = el('div');
    this.node.append(viewHost);

    this.view = new GpuDaskView(viewHost, {
      onControl: change => this.onControl(change),
      onActionDone: () => this.poller.reset() // the new state is in the next snapshot
    });
    this.actionHost = new KernelActionHost(() => this.focus.kernel, {
      started: id => this.view.actionStarted(id),
      finished: (id, result) => this.view.actionFinished(id, result)
    });
    this.kernelWatch = new KernelWatch(liveness => {
      this.view.setLiveness(liveness);
      if (liveness.kind === 'live') {
        this.poller.reset(); // back (a restart): what the new kernel has, from a snapshot
      }
    });
    this.poller = new FramePoller({
      fetchFrame: options.fetchFrame,
      kernel: () => this.kernelId,
      interval: () => this.view.currentControls.interval,
      onFrame: frame => this.view.update(frame),
      onError: message => {
        if (message !== this.requestError) {
          this.requestError = message;
          this.showMessages();
        }
      }
    });
    this.focus.changed.connect(this.onFocusChanged, this);
    this.onFocusChanged();
  }

  /** The view (tests, and the command that opens a panel). */
  get gpudaskView(): GpuDaskView {
    return this.view;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.poller.stop();
    this.kernelWatch.dispose();
    this.focus.changed.disconnect(this.onFocusChanged, this);
    this.view.dispose();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) {
      this.startPolling();
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.startPolling();
  }

  protected onBeforeHide(msg: Message): void {
    this.poller.stop();
    super.onBeforeHide(msg);
  }

  protected onBeforeDetach(msg: Message): void {
    this.poller.stop();
    super.onBeforeDetach(msg);
  }

  private startPolling(): void {
    if (!this.view.currentControls.paused) {
      this.poller.start();
    }
  }

  private onControl(change: Partial<Controls>): void {
    const wasPaused = this.view.currentControls.paused;
    this.view.setControls(change);
    const paused = this.view.currentControls.paused;
    if (paused && !wasPaused) {
      this.poller.stop();
    } else if (wasPaused && !paused) {
      this.poller.reset(); // a fresh snapshot, not the deltas skipped while paused
      if (this.isVisible) {
        this.poller.start();
      }
    } else if (change.interval !== undefined) {
      this.poller.restart(); // do not wait out the old interval
    }
  }

  private onFocusChanged(): void {
    const kernelId = this.focus.kernelId;
    const notebookId = this.focus.notebookId ?? '';
    if (notebookId !== this.notebookId) {
      // another notebook: its own story from the start
      this.notebookId = notebookId;
      this.kernelId = kernelId;
      this.view.reset();
      this.view.setLiveness({ kind: 'live' });
      this.poller.reset();
    } else if (kernelId !== this.kernelId) {
      // the same notebook, another kernel or none (shut down): keep what it showed, stopped
      this.kernelId = kernelId;
      if (!kernelId) {
        const at = Date.now() / 1000;
        this.view.setLiveness({ kind: 'gone', text: KERNEL_SHUT_DOWN, at });
      }
      this.poller.reset();
    }
    this.kernelWatch.watch(this.focus.kernel);
    this.view.setActionHost(this.actionHost, this.focus.kernel !== null);
    this.showMessages();
  }

  private async open(openPanel: () => boolean | void | Promise<boolean | void>): Promise<void> {
    let opened: boolean | void;
    try {
      opened = await openPanel();
    } catch (error) {
      this.openError = `Could not open the panel: ${error instanceof Error ? error.message : String(error)}`;
      this.showMessages();
      return;
    }
    this.openError = opened === false ? NO_AREA : null;
    this.showMessages();
  }

  private showMessages(): void {
    const lines: string[] = [];
    if (this.openError) {
      lines.push(this.openError);
    }
    if (!this.focus.hasNotebook) {
      lines.push(NO_NOTEBOOK);
    } else if (!this.kernelId) {
      lines.push(NO_KERNEL);
    }
    if (this.requestError) {
      lines.push(this.requestError);
    }
    this.view.setHostMessages(lines);
    this.view.setClusterHint(this.kernelId ? CLUSTER_HINT : null);
  }
}
