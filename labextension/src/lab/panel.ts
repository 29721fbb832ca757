/**
 * A Lumino widget hosting the view, fed by its own poller that runs only while the widget is
 * visible. Used for the sidebar and for the panel opened in the main area.
 */
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { el } from '../view/dom';
import { Controls, GpuDaskView } from '../view/render';
import { startCluster } from './cluster';
import type { Focus } from './focus';
import { FetchFrame, FramePoller } from './poller';

export const NO_NOTEBOOK = 'No notebook in focus: select a notebook to see its cluster.';
export const NO_KERNEL = 'The notebook in focus has no kernel.';
const CLUSTER_HINT =
  'No Dask cluster for this notebook: press Start cluster, or run %gpu_cluster start in it.';

export interface PanelOptions {
  focus: Focus;
  fetchFrame: FetchFrame;
  /** Shows an "Open panel" button that calls this. */
  openPanel?: () => void;
  /** A title above the buttons (the sidebar has no tab label). */
  heading?: string;
}

export class GpuDaskPanel extends Widget {
  private readonly focus: Focus;
  private readonly view: GpuDaskView;
  private readonly poller: FramePoller;
  private readonly startButton = el('button', 'gpudask-start', 'Start cluster');
  private readonly outcome = el('div', 'gpudask-outcome');
  private kernelId = '';
  private requestError: string | null = null;
  private starting = false;

  constructor(options: PanelOptions) {
    super();
    this.addClass('gpudask-panel');
    this.node.style.overflow = 'auto';
    this.focus = options.focus;

    const actions = el('div', 'gpudask-actions');
    if (options.heading) {
      actions.append(el('span', 'gpudask-heading', options.heading));
    }
    this.startButton.type = 'button';
    this.startButton.addEventListener('click', () => void this.start());
    actions.append(this.startButton);
    if (options.openPanel) {
      const open = el('button', 'gpudask-open', 'Open panel');
      open.type = 'button';
      open.addEventListener('click', options.openPanel);
      actions.append(open);
    }
    const viewHost = el('div');
    this.node.append(actions, this.outcome, viewHost);

    this.view = new GpuDaskView(viewHost, { onControl: change => this.onControl(change) });
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

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.poller.stop();
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
    if (kernelId !== this.kernelId) {
      this.kernelId = kernelId;
      this.outcome.textContent = '';
      this.view.reset();
      this.poller.reset();
    }
    this.showMessages();
  }

  private showMessages(): void {
    const lines: string[] = [];
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
    this.startButton.disabled = this.starting || !this.kernelId;
  }

  private async start(): Promise<void> {
    const kernel = this.focus.kernel;
    if (!kernel || this.starting) {
      return;
    }
    this.starting = true;
    this.showMessages();
    this.outcome.className = 'gpudask-outcome';
    this.outcome.textContent = 'Starting a cluster…';
    const outcome = await startCluster(kernel);
    this.starting = false;
    if (this.isDisposed) {
      return;
    }
    this.outcome.className = outcome.ok ? 'gpudask-outcome' : 'gpudask-outcome gpudask-erred';
    this.outcome.textContent = outcome.text;
    this.showMessages();
    this.poller.reset(); // the new cluster is in the next snapshot
  }
}
