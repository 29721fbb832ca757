/**
 * GpuDaskView: builds the DOM once in a container and redraws it after frames, at most once per
 * animation frame. Both hosts (the anywidget and the JupyterLab sidebar/panel) use it.
 *
 * What was drawn is exposed for tests as data attributes on the root, updated each paint:
 * data-devices, data-task-rects, data-lanes, data-frames and data-state.
 */
import { timeAxis } from './axis';
import { Controls, ControlsSection, DEFAULT_CONTROLS, normalizeControls } from './controls';
import { DevicesSection } from './devices';
import { el } from './dom';
import { MessagesSection, statusLines } from './messages';
import { ProcessesSection } from './processes';
import { ProgressSection } from './progress';
import { applyFrame, emptyState, ViewState } from './state';
import { injectStyle } from './style';
import { TaskStream } from './tasks';
import { WorkersSection } from './workers';

export type { Controls } from './controls';

export const DEFAULT_CLUSTER_HINT =
  'No Dask cluster in this kernel: start one with %gpu_cluster start.';

/** Plot width before layout (a hidden sidebar, jsdom): redrawn when the real size is known. */
const FALLBACK_WIDTH = 600;

export interface ViewOptions {
  /** Initial controls (clamped). */
  controls?: Partial<Controls>;
  /** What the user asked for; the host answers with setControls. */
  onControl?: (change: Partial<Controls>) => void;
  /** Said when frames have no cluster; null: say nothing. */
  clusterHint?: string | null;
}

export class GpuDaskView {
  readonly root = el('div', 'gpudask-view');
  private state: ViewState = emptyState();
  private controls: Controls;
  private hostMessages: string[] = [];
  private clusterHint: string | null;
  private readonly abort = new AbortController();
  private pending: number | null = null;
  private resizeObserver: ResizeObserver | null = null;
  private disposed = false;

  private readonly ruler = el('div', 'gpudask-plot gpudask-ruler');
  private readonly messages = new MessagesSection();
  private readonly controlsSection: ControlsSection;
  private readonly devices = new DevicesSection();
  private readonly processes = new ProcessesSection();
  private readonly stream = new TaskStream();
  private readonly progress = new ProgressSection();
  private readonly workers = new WorkersSection();

  constructor(container: HTMLElement, options: ViewOptions = {}) {
    this.controls = normalizeControls(options.controls ?? {}, DEFAULT_CONTROLS);
    this.clusterHint =
      options.clusterHint === undefined ? DEFAULT_CLUSTER_HINT : options.clusterHint;
    const onControl = options.onControl ?? (() => undefined);
    this.controlsSection = new ControlsSection(
      () => this.controls,
      change => !this.disposed && onControl(change),
      this.abort.signal
    );

    // A zero-height ruler in the plot column: its width is the one width of every canvas,
    // so the GPU histories and the task stream share a time axis.
    const rulerRow = el('div', 'gpudask-row');
    rulerRow.append(el('div', 'gpudask-gutter'), this.ruler);
    this.root.append(
      this.messages.node,
      this.controlsSection.node,
      rulerRow,
      this.devices.node,
      this.processes.node,
      this.stream.node,
      this.stream.legend,
      this.progress.node,
      this.workers.node
    );
    injectStyle(container.ownerDocument);
    container.append(this.root);

    if (typeof ResizeObserver !== 'undefined') {
      this.resizeObserver = new ResizeObserver(() => this.schedule());
      this.resizeObserver.observe(this.ruler);
    }
    this.paint();
  }

  get viewState(): ViewState {
    return this.state;
  }

  get currentControls(): Controls {
    return this.controls;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Apply a frame; false when it was ignored (paused or disposed). */
  update(frame: unknown): boolean {
    if (this.disposed || this.controls.paused) {
      return false;
    }
    this.state = applyFrame(this.state, frame);
    this.schedule();
    return true;
  }

  /** Forget every frame (another kernel in focus): the next frame should be a snapshot. */
  reset(): void {
    this.state = emptyState();
    this.schedule();
  }

  setHostMessages(lines: string[]): void {
    this.hostMessages = [...lines];
    this.schedule();
  }

  setClusterHint(hint: string | null): void {
    this.clusterHint = hint;
    this.schedule();
  }

  setControls(change: Partial<Controls>): void {
    this.controls = normalizeControls(change, this.controls);
    this.schedule();
  }

  /** Paint now if a paint is pending (tests; hosts about to be measured). */
  flush(): void {
    if (this.pending !== null) {
      cancelAnimationFrame(this.pending);
      this.pending = null;
      this.paint();
    }
  }

  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    this.abort.abort(); // removes every DOM listener added with its signal
    if (this.pending !== null) {
      cancelAnimationFrame(this.pending);
      this.pending = null;
    }
    this.resizeObserver?.disconnect();
    this.resizeObserver = null;
    this.root.remove();
  }

  /** Coalesce redraws: many frames or resizes within one animation frame paint once. */
  private schedule(): void {
    if (this.disposed || this.pending !== null) {
      return;
    }
    this.pending = requestAnimationFrame(() => {
      this.pending = null;
      this.paint();
    });
  }

  private paint(): void {
    if (this.disposed) {
      return;
    }
    const { state, controls } = this;
    const width = this.ruler.clientWidth || FALLBACK_WIDTH;
    const axis = timeAxis(state.time ?? Date.now() / 1000, controls.history, width);

    this.messages.update(
      statusLines(state, {
        host: this.hostMessages,
        paused: controls.paused,
        clusterHint: this.clusterHint
      })
    );
    this.controlsSection.show(controls);
    const devices = this.devices.update(state, axis);
    this.processes.update(controls.processes, state.processes, state.devices);
    const drawn = this.stream.update(state, axis);
    // no cluster and nothing drawn: an empty stream says nothing the status line does not
    const noStream = state.cluster === null && drawn.rects === 0;
    this.stream.node.hidden = noStream;
    this.stream.legend.hidden = noStream;
    this.progress.update(state.progress);
    this.workers.update(state.workers);

    const data = this.root.dataset;
    data.devices = String(devices);
    data.taskRects = String(drawn.rects);
    data.lanes = String(drawn.lanes);
    data.frames = String(state.frames);
    data.state = controls.paused ? 'paused' : state.frames === 0 ? 'empty' : 'live';
  }
}
