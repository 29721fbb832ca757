/**
 * GpuDaskView: builds the DOM once in a container and redraws it after frames, at most once per
 * animation frame. Both hosts (the anywidget and the JupyterLab sidebar/panel) use it; they feed
 * it frames, their kernel's liveness, and (optionally) a runner for the cluster actions.
 *
 * What was drawn is exposed for tests as data attributes on the root, updated each paint:
 * data-devices, data-gpu-lines, data-task-rects, data-lanes, data-frames, data-state,
 * data-liveness, data-layout ("wide" or "compact") and data-window.
 */
import { ActionName, ActionResult } from './actions';
import { ChartEvents, Theme, readTheme } from './charts';
import { ActionHost, ClusterActions } from './clusteractions';
import { ClusterLine } from './cluster';
import { PrefixColors } from './colors';
import { Controls, ControlsSection, DEFAULT_CONTROLS, normalizeControls } from './controls';
import { DevicesSection } from './devices';
import { el } from './dom';
import { GpuCharts, gpuColor } from './gpucharts';
import { Legend, RecentWork } from './legend';
import { FrameWatchdog, LIVE, Liveness } from './liveness';
import { MessagesSection, statusLines } from './messages';
import { ProcessesSection } from './processes';
import { ProgressSection } from './progress';
import { ViewState, applyFrame, clearStopped, emptyState, markStopped } from './state';
import { injectStyle } from './style';
import { TaskChart } from './taskchart';
import {
  TimeRange,
  WindowMode,
  panRange,
  tasksInRange,
  visibleRange,
  zoomRange
} from './timewindow';
import { WindowBar } from './windowbar';
import { COMPACT_WIDTH, WorkersSection } from './workers';

export type { Controls } from './controls';
export type { ActionHost } from './clusteractions';

export const DEFAULT_CLUSTER_HINT =
  'No Dask cluster in this kernel: press Start, or run %gpu_cluster start.';

/** Width before layout (a hidden sidebar, jsdom): redrawn when the real size is known. */
const FALLBACK_WIDTH = 600;
let views = 0;

export interface ViewOptions {
  /** Initial controls (clamped). */
  controls?: Partial<Controls>;
  /** What the user asked for; the host answers with setControls. */
  onControl?: (change: Partial<Controls>) => void;
  /** Said when frames have no cluster; null: say nothing. */
  clusterHint?: string | null;
  /** Say "not responding" when no frame came for max(2 s, 3 intervals) (the widget). */
  watchFrames?: boolean;
  /** An action finished (e.g. the sidebar asks for a fresh snapshot after a start). */
  onActionDone?: (action: ActionName, result: ActionResult) => void;
}

export class GpuDaskView {
  readonly root = el('div', 'gpudask-view');
  private state: ViewState = emptyState();
  private controls: Controls;
  private hostMessages: string[] = [];
  private clusterHint: string | null;
  private liveness: Liveness = LIVE;
  private mode: WindowMode = { kind: 'follow' };
  private range: TimeRange = { start: 0, end: 1 };
  private readonly abort = new AbortController();
  private pending: number | null = null;
  private resizeObserver: ResizeObserver | null = null;
  private disposed = false;
  private readonly watchdog: FrameWatchdog | null;
  private readonly colors = new PrefixColors();

  private readonly cluster: ClusterLine;
  private readonly actions: ClusterActions;
  private readonly messages = new MessagesSection();
  private readonly controlsSection: ControlsSection;
  private readonly devices = new DevicesSection();
  private readonly processes = new ProcessesSection();
  private readonly windowBar: WindowBar;
  private readonly gpuCharts: GpuCharts;
  private readonly stream: TaskChart;
  private readonly legend = new Legend();
  private readonly progress = new ProgressSection();
  private readonly recent = new RecentWork();
  private readonly workers = new WorkersSection();

  constructor(container: HTMLElement, options: ViewOptions = {}) {
    const signal = this.abort.signal;
    this.controls = normalizeControls(options.controls ?? {}, DEFAULT_CONTROLS);
    this.clusterHint =
      options.clusterHint === undefined ? DEFAULT_CLUSTER_HINT : options.clusterHint;
    const onControl = options.onControl ?? (() => undefined);
    this.controlsSection = new ControlsSection(
      () => this.controls,
      change => !this.disposed && onControl(change),
      signal
    );
    this.cluster = new ClusterLine(() => this.clear(), signal);
    this.actions = new ClusterActions(
      () => this.schedule(),
      options.onActionDone ?? (() => undefined),
      signal
    );
    this.windowBar = new WindowBar(mode => this.setWindow(mode), signal);
    const chartParts = {
      range: () => this.range,
      theme: () => this.theme,
      syncKey: `gpudask-${++views}`,
      events: this.chartEvents(),
      signal
    };
    this.gpuCharts = new GpuCharts(chartParts);
    this.stream = new TaskChart(chartParts);
    this.stream.node.append(this.legend.node);
    this.watchdog = options.watchFrames
      ? new FrameWatchdog({ onChange: l => this.setLiveness(l, true) })
      : null;

    const header = el('div', 'gpudask-header');
    header.append(this.cluster.node, this.actions.bar.node, this.actions.bar.status);
    this.root.append(
      header,
      this.messages.node,
      this.controlsSection.node,
      this.devices.node,
      this.processes.node,
      this.windowBar.node,
      this.gpuCharts.node,
      this.stream.node,
      this.progress.node,
      this.recent.node,
      this.workers.node
    );
    injectStyle(container.ownerDocument);
    container.append(this.root);

    if (typeof ResizeObserver !== 'undefined') {
      this.resizeObserver = new ResizeObserver(() => this.schedule());
      this.resizeObserver.observe(this.root);
    }
    this.watchdog?.start(this.controls.interval);
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

  get window(): WindowMode {
    return this.mode;
  }

  /** The task tooltip's text ("" when none is shown). */
  get hoverText(): string {
    return this.stream.hoverText;
  }

  /** Apply a frame; false when it was ignored (paused, gone or disposed). */
  update(frame: unknown): boolean {
    if (this.disposed || this.controls.paused || this.liveness.kind === 'gone') {
      return false;
    }
    this.state = applyFrame(this.state, frame);
    this.watchdog?.frame(this.controls.interval);
    this.schedule();
    return true;
  }

  /** Forget every frame (another kernel in focus): the next frame should be a snapshot. */
  reset(): void {
    this.state = emptyState();
    this.colors.reset();
    this.mode = { kind: 'follow' };
    this.actions.machine.clear();
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
    if (this.controls.paused || this.liveness.kind === 'gone') {
      this.watchdog?.stop();
    } else if (change.paused === false || change.interval !== undefined) {
      this.watchdog?.start(this.controls.interval);
    }
    this.schedule();
  }

  /**
   * The kernel's liveness from the host. "gone" freezes the view: the cluster shown is marked
   * stopped now, an action under way fails, frames are ignored until the host says "live".
   */
  setLiveness(liveness: Liveness, fromWatchdog = false): void {
    if (fromWatchdog && this.liveness.kind === 'gone') {
      return;
    }
    this.liveness = liveness;
    if (liveness.kind === 'gone') {
      this.watchdog?.stop();
      this.state = markStopped(this.state, liveness.at);
      this.actions.abort(liveness.text);
    } else if (liveness.kind === 'live' && !fromWatchdog && !this.controls.paused) {
      this.watchdog?.start(this.controls.interval);
    }
    this.schedule();
  }

  /** Who runs cluster actions (null: none, the buttons are hidden). */
  setActionHost(host: ActionHost | null, hasKernel = host !== null): void {
    this.actions.setHost(host, hasKernel);
  }

  actionStarted(id: number): void {
    this.actions.started(id);
  }

  actionFinished(id: number, result: ActionResult): void {
    this.actions.finished(id, result);
  }

  abortAction(why: string): void {
    this.actions.abort(why);
  }

  setWindow(mode: WindowMode): void {
    this.mode = mode;
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
    this.watchdog?.stop();
    if (this.pending !== null) {
      cancelAnimationFrame(this.pending);
      this.pending = null;
    }
    this.resizeObserver?.disconnect();
    this.resizeObserver = null;
    this.gpuCharts.destroy();
    this.stream.destroy();
    this.root.remove();
  }

  private theme: Theme = { fg: '#333', grid: 'rgba(128, 128, 128, 0.3)' };

  private chartEvents(): ChartEvents {
    return {
      select: range => this.setWindow({ kind: 'fixed', ...range }),
      follow: () => this.setWindow({ kind: 'follow' }),
      zoom: (at, factor) => this.setWindow({ kind: 'fixed', ...zoomRange(this.range, at, factor) }),
      pan: fraction => this.setWindow({ kind: 'fixed', ...panRange(this.range, fraction) })
    };
  }

  private clear(): void {
    this.state = clearStopped(this.state);
    this.colors.reset();
    this.actions.machine.clear();
    this.schedule();
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
    const width = Math.max(0, this.root.clientWidth - 12) || FALLBACK_WIDTH;
    const compact = width < COMPACT_WIDTH - 12;
    this.root.classList.toggle('gpudask-compact', compact);
    const stopped = state.cluster?.state === 'stopped';
    this.root.classList.toggle('gpudask-stopped', stopped);
    this.theme = readTheme(this.root);

    const now = state.time ?? Date.now() / 1000;
    // a stopped cluster's work stays in reach however old it is
    const history = stopped ? Infinity : state.history;
    this.range = visibleRange(this.mode, now, state.tasks, Math.min(history, now));
    const colors = this.colors.update(state.tasks);
    const rects = tasksInRange(state.tasks, this.range);

    this.cluster.update(state.cluster, state.workers.length, this.clusterHint);
    this.actions.show(state.cluster, state.workers.length, Date.now() / 1000);
    this.messages.update(
      statusLines(state, {
        host: this.hostMessages,
        paused: controls.paused,
        liveness: this.liveness
      })
    );
    this.controlsSection.show(controls);
    const devices = this.devices.update(state.devices, state.samples, gpuColor);
    this.processes.update(controls.processes, state.processes, state.devices, state.nvml);
    const lines = this.gpuCharts.update(state, state.devices, width);
    // no cluster and nothing drawn: an empty stream says nothing the status line does not
    const noStream = state.cluster === null && state.tasks.length === 0;
    this.stream.node.hidden = noStream;
    this.windowBar.node.hidden = noStream && devices === 0;
    this.windowBar.show(this.mode, this.range);
    const drawn = noStream
      ? { rects: 0, lanes: 0 }
      : this.stream.update(rects, state.workers, colors, width);
    this.legend.update(rects, colors);
    this.progress.update(state.progress, colors);
    this.recent.update(rects, colors);
    const layout = this.workers.update(state.workers, width);

    const data = this.root.dataset;
    data.devices = String(devices);
    data.gpuLines = String(lines);
    data.taskRects = String(drawn.rects);
    data.lanes = String(drawn.lanes);
    data.frames = String(state.frames);
    data.state = controls.paused ? 'paused' : state.frames === 0 ? 'empty' : 'live';
    data.liveness = this.liveness.kind;
    data.layout = compact || layout === 'cards' ? 'compact' : 'wide';
    data.window = this.mode.kind;
  }
}
