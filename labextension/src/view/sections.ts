/**
 * The sections of the view, top to bottom, and one paint of all of them from the view's state:
 * the cluster and its actions, the status lines, the settings, the GPUs now, the room of a
 * shared GPU server, the time window, the GPU charts, the task stream with its legend, progress,
 * recent work, GPU time per prefix and the workers.
 */
import { ShownCluster } from './actions';
import { ChartParts } from './charts';
import { ClusterActions } from './clusteractions';
import { ClusterLine } from './cluster';
import { Controls, ControlsSection } from './controls';
import { DevicesSection } from './devices';
import { el } from './dom';
import { TaskRect } from './frame';
import { GpuCharts, gpuColor } from './gpucharts';
import { GpuTimeSection } from './gputime';
import { Legend, RecentWork } from './legend';
import { Liveness } from './liveness';
import { MessagesSection, statusLines } from './messages';
import { ProcessesSection } from './processes';
import { ProgressSection } from './progress';
import { RoomSection } from './room';
import { ViewState } from './state';
import { TaskChart } from './taskchart';
import { TimeRange, WindowMode } from './timewindow';
import { WindowBar } from './windowbar';
import { WorkerLayout, WorkersSection } from './workers';

export interface SectionHooks {
  signal: AbortSignal;
  controls: () => Controls;
  onControl: (change: Partial<Controls>) => void;
  onClear: () => void;
  onWindow: (mode: WindowMode) => void;
  chartParts: ChartParts;
  actions: ClusterActions;
}

/** Everything one paint draws from. */
export interface PaintInput {
  state: ViewState;
  /** The cluster the header and the buttons show: the frames', or an action's fresher word. */
  shown: ShownCluster;
  controls: Controls;
  hostMessages: string[];
  clusterHint: string | null;
  liveness: Liveness;
  mode: WindowMode;
  range: TimeRange;
  /** The content width, CSS px. */
  width: number;
  colors: ReadonlyMap<string, string>;
  /** The task rectangles in the window. */
  rects: TaskRect[];
}

/** What a paint drew: the view's data attributes. */
export interface Drawn {
  devices: number;
  gpuLines: number;
  /** GPU blocks of the room section (0: no room). */
  room: number;
  rects: number;
  lanes: number;
  /** The task stream's row height, CSS px (0: no stream). */
  row: number;
  workerLayout: WorkerLayout;
}

export class Sections {
  readonly nodes: HTMLElement[];
  private readonly cluster: ClusterLine;
  private readonly actions: ClusterActions;
  private readonly messages = new MessagesSection();
  private readonly controls: ControlsSection;
  private readonly devices = new DevicesSection();
  private readonly processes = new ProcessesSection();
  private readonly room = new RoomSection();
  private readonly windowBar: WindowBar;
  private readonly gpuCharts: GpuCharts;
  private readonly stream: TaskChart;
  private readonly legend = new Legend();
  private readonly progress = new ProgressSection();
  private readonly recent = new RecentWork();
  private readonly gpuTime = new GpuTimeSection();
  private readonly workers = new WorkersSection();

  constructor(hooks: SectionHooks) {
    this.cluster = new ClusterLine(hooks.onClear, hooks.signal);
    this.actions = hooks.actions;
    this.controls = new ControlsSection(hooks.controls, hooks.onControl, hooks.signal);
    this.windowBar = new WindowBar(hooks.onWindow, hooks.signal);
    this.gpuCharts = new GpuCharts(hooks.chartParts);
    this.stream = new TaskChart(hooks.chartParts);
    this.stream.node.append(this.legend.node);
    const header = el('div', 'gpudask-header');
    header.append(this.cluster.node, this.actions.bar.node, this.actions.bar.status);
    // the time window and the panel's settings share a line where there is room
    const toolbar = el('div', 'gpudask-toolbar');
    toolbar.append(this.windowBar.node, this.controls.node);
    this.nodes = [
      header,
      this.messages.node,
      this.devices.node,
      this.processes.node,
      this.room.node,
      toolbar,
      this.gpuCharts.node,
      this.stream.node,
      this.progress.node,
      this.recent.node,
      this.gpuTime.node,
      this.workers.node
    ];
  }

  /** The task tooltip's text ("" when none is shown). */
  get hoverText(): string {
    return this.stream.hoverText;
  }

  paint(input: PaintInput): Drawn {
    const { state, controls, width, colors, rects } = input;
    const { shown } = input;
    this.cluster.update(shown.cluster, shown.workers, input.clusterHint, state.tasks.length);
    const reachable = input.liveness.kind !== 'gone';
    this.actions.show(shown.cluster, shown.workers, Date.now() / 1000, reachable);
    this.messages.update(
      statusLines(state, {
        host: input.hostMessages,
        paused: controls.paused,
        liveness: input.liveness
      })
    );
    this.controls.show(controls, state.devices.length > 0);
    const devices = this.devices.update(state.devices, state.samples, gpuColor);
    this.processes.update(controls.processes, state.processes, state.devices, state.nvml);
    const room = this.room.update(
      state.room,
      state.time ?? Date.now() / 1000,
      state.devices,
      gpuColor
    );
    const gpuLines = this.gpuCharts.update(state, state.devices, width);
    // no cluster and nothing drawn: an empty stream says nothing the cluster line does not
    const noStream = shown.cluster === null && state.tasks.length === 0;
    this.stream.node.hidden = noStream;
    this.windowBar.node.hidden = noStream && devices === 0;
    this.windowBar.show(input.mode, input.range);
    const drawn = noStream
      ? { rects: 0, lanes: 0, row: 0 }
      : this.stream.update(
          rects,
          state.workers,
          colors,
          width,
          state.workerNames,
          state.tasks.length
        );
    this.legend.update(rects, colors);
    this.progress.update(state.progress, colors);
    this.recent.update(rects, colors);
    this.gpuTime.update(state.gpu_time);
    const workerLayout = this.workers.update(state.workers, width);
    return { devices, gpuLines, room, ...drawn, workerLayout };
  }

  destroy(): void {
    this.gpuCharts.destroy();
    this.stream.destroy();
  }
}
