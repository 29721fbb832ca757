/**
 * GpuDaskView: builds the DOM once in a container and redraws it after frames, at most once per
 * animation frame. Both hosts (the anywidget and the JupyterLab sidebar/panel) use it; they feed
 * it frames, their kernel's liveness, and (optionally) a runner for the cluster actions.
 *
 * What was drawn is exposed for tests as data attributes on the root, updated each paint:
 * data-devices, data-gpu-lines, data-room (the room's GPU blocks), data-task-rects, data-lanes,
 * data-row-height, data-frames, data-state, data-liveness, data-layout ("wide" or "compact") and data-window.
 */
import { ActionName, ActionResult, shownCluster } from './actions';
import { LARGE_WIDTH, Theme, readTheme } from './charts';
import { ActionHost, ClusterActions } from './clusteractions';
import { prefixColors } from './colors';
import { Controls, DEFAULT_CONTROLS, normalizeControls } from './controls';
import { el, holdHeights } from './dom';
import { FrameWatchdog, LIVE, Liveness } from './liveness';
import { Sections } from './sections';
import { ViewState, applyFrame, clearStopped, emptyState, markStopped } from './state';
import { injectStyle } from './style';
import { TimeRange, WindowMode, tasksInRange, visibleRange, windowEvents } from './timewindow';
import { COMPACT_WIDTH } from './workers';

export type { Controls } from './controls';
export type { ActionHost } from './clusteractions';

export const DEFAULT_CLUSTER_HINT =
  'No Dask cluster in this kernel: press Start, or run %gpu_cluster start.';

/** Width before layout (a hidden sidebar, jsdom): redrawn when the real size is known. */
const FALLBACK_WIDTH = 600;
/** Below this width a GPU's facts take a block each instead of one line. */
const NARROW_WIDTH = 900;
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

  private theme: Theme = { fg: '#333', grid: 'rgba(128, 128, 128, 0.3)' };
  /** Wide enough to be drawn large (LARGE_WIDTH): a panel on a projector. */
  private large = false;
  private readonly actions: ClusterActions;
  private readonly sections: Sections;

  constructor(container: HTMLElement, options: ViewOptions = {}) {
    const signal = this.abort.signal;
    this.controls = normalizeControls(options.controls ?? {}, DEFAULT_CONTROLS);
    this.clusterHint =
      options.clusterHint === undefined ? DEFAULT_CLUSTER_HINT : options.clusterHint;
    const onControl = options.onControl ?? (() => undefined);
    this.actions = new ClusterActions(
      () => this.schedule(),
      options.onActionDone ?? (() => undefined),
      signal
    );
    this.sections = new Sections({
      signal,
      controls: () => this.controls,
      onControl: change => !this.disposed && onControl(change),
      onClear: () => this.clear(),
      onWindow: mode => this.setWindow(mode),
      actions: this.actions,
      chartParts: {
        range: () => this.range,
        large: () => this.large,
        theme: () => this.theme,
        syncKey: `gpudask-${++views}`,
        events: windowEvents(
          () => this.range,
          mode => this.setWindow(mode)
        ),
        signal
      }
    });
    this.watchdog = options.watchFrames
      ? new FrameWatchdog({ onChange: l => this.setLiveness(l, true) })
      : null;
    this.root.append(...this.sections.nodes);
    injectStyle(container.ownerDocument);
    container.append(this.root);

    if (typeof ResizeObserver !== 'undefined') {
      // a new width redraws the charts; a new height (the content's own) does not
      let observed = -1;
      this.resizeObserver = new ResizeObserver(entries => {
        const width = entries[0]?.contentRect.width ?? -1;
        if (width !== observed) {
          observed = width;
          this.schedule();
        }
      });
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
    return this.sections.hoverText;
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
    this.sections.destroy();
    this.root.remove();
  }

  private clear(): void {
    this.state = clearStopped(this.state);
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
    const shown = shownCluster(
      { cluster: state.cluster, workers: state.workers.length },
      state.time,
      this.actions.machine.phase,
      Date.now() / 1000
    );
    // greyed: the cluster shown stopped, or the history below is a stopped one's (a new cluster
    // started a moment ago, and the frames do not carry it yet)
    const stopped = shown.cluster?.state === 'stopped' || state.cluster?.state === 'stopped';
    this.large = width >= LARGE_WIDTH;
    this.root.classList.toggle('gpudask-large', this.large);
    this.root.classList.toggle('gpudask-compact', compact);
    this.root.classList.toggle('gpudask-narrow', width < NARROW_WIDTH);
    this.root.classList.toggle('gpudask-stopped', stopped);
    this.theme = readTheme(this.root);

    // a stopped cluster's window stands still at its stop (frames keep coming with new times)
    const stoppedAt = stopped ? (shown.cluster?.stopped_at ?? null) : null;
    const now = stoppedAt ?? state.time ?? Date.now() / 1000;
    // a stopped cluster's work stays in reach however old it is
    const history = stopped ? now : state.history;
    this.range = visibleRange(this.mode, now, state.tasks, history);
    const drawn = this.sections.paint({
      state,
      shown,
      controls,
      hostMessages: this.hostMessages,
      clusterHint: this.clusterHint,
      liveness: this.liveness,
      mode: this.mode,
      range: this.range,
      width,
      colors: prefixColors(state.tasks, state.progress),
      rects: tasksInRange(state.tasks, this.range)
    });

    const data = this.root.dataset;
    data.devices = String(drawn.devices);
    data.gpuLines = String(drawn.gpuLines);
    data.room = String(drawn.room);
    data.taskRects = String(drawn.rects);
    data.lanes = String(drawn.lanes);
    data.rowHeight = String(drawn.row);
    data.frames = String(state.frames);
    data.state = controls.paused ? 'paused' : state.frames === 0 ? 'empty' : 'live';
    data.liveness = this.liveness.kind;
    data.layout = compact || drawn.workerLayout === 'cards' ? 'compact' : 'wide';
    data.window = this.mode.kind;
    holdHeights(this.root);
  }
}
