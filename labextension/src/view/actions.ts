/**
 * Cluster actions (start, stop, restart, scale, detach): which are offered for the cluster
 * shown, and the life of one request (sent, waiting behind a running cell, running, done), as
 * pure state. The host runs them in the kernel (lab/runner.ts, the widget's comm) and reports
 * `started` and the result; actionbar.ts draws this state.
 */
import { ClusterInfo, ClusterState } from './frame';
import { formatSeconds } from './format';
import { ActionResult, CONTROL_ACTIONS, ControlAction, ResultCluster } from './protocol.generated';

export type { ActionResult, ResultCluster } from './protocol.generated';

/** Every action, in the order the bar shows them (the kernel's list: protocol.generated). */
export const ACTIONS = CONTROL_ACTIONS;
export type ActionName = ControlAction;

export type Phase =
  | { kind: 'idle' }
  | { kind: 'waiting'; id: number; action: ActionName; n: number | null; since: number }
  | { kind: 'running'; id: number; action: ActionName; n: number | null; since: number }
  | { kind: 'done'; id: number; action: ActionName; result: ActionResult; at: number };

/** A request not started this long after it was sent is said to wait behind a running cell. */
export const WAIT_HINT_SECONDS = 1;

export interface Offer {
  visible: boolean;
  enabled: boolean;
  /** Why not enabled (the button's title), or what it does. */
  title: string;
}

const LIVE = new Set(['running', 'connecting', 'unreachable']);

/** Which actions the bar offers for `cluster`, given a kernel to run them in and the phase. */
export function offers(
  cluster: ClusterInfo | null,
  hasKernel: boolean,
  phase: Phase
): Record<ActionName, Offer> {
  const busy = phase.kind === 'waiting' || phase.kind === 'running';
  const live = cluster !== null && LIVE.has(cluster.state);
  const attached = cluster?.mode === 'attached';
  // a cluster this kernel joined: Stop retires its workers and disconnects; it cannot be scaled
  const joined = cluster?.mode === 'joined';
  const why = !hasKernel ? 'No kernel to run it in.' : busy ? 'Another action is running.' : '';
  const offer = (visible: boolean, possible: boolean, title: string, not: string): Offer => ({
    visible,
    enabled: visible && possible && why === '',
    title: why || (possible ? title : not)
  });
  return {
    start: offer(
      !(attached || joined) || !live,
      !live,
      'Start a Dask cluster in this kernel (%gpu_cluster start).',
      'A cluster runs already: stop it first.'
    ),
    stop: offer(
      live && !attached,
      live,
      joined
        ? "Retire this kernel's workers (their data moves to the other workers), then disconnect."
        : "Stop this kernel's cluster.",
      'No cluster runs.'
    ),
    restart: offer(live, cluster?.state === 'running', 'Restart the workers.', 'Not running.'),
    scale: offer(
      live && !attached && !joined,
      cluster?.state === 'running',
      'Set the number of workers.',
      'Not running.'
    ),
    detach: offer(
      live && attached,
      live,
      'Disconnect from the attached scheduler (it keeps running).',
      'Not attached.'
    )
  };
}

const VERB: Record<ActionName, string> = {
  start: 'Starting a cluster',
  stop: 'Stopping the cluster',
  restart: 'Restarting the workers',
  scale: 'Scaling',
  detach: 'Detaching'
};

/** The line shown while an action is under way, with its elapsed seconds. */
export function progressText(phase: Phase, now: number): string | null {
  if (phase.kind !== 'waiting' && phase.kind !== 'running') {
    return null;
  }
  const verb =
    phase.action === 'scale' ? `Scaling to ${phase.n ?? '?'} workers` : VERB[phase.action];
  const elapsed = Math.max(0, Math.floor(now - phase.since));
  if (phase.kind === 'waiting' && now - phase.since >= WAIT_HINT_SECONDS) {
    return `${verb}… ${elapsed} s: waiting for the cell that is running in this kernel to finish.`;
  }
  return `${verb}… ${elapsed} s`;
}

/** The result as lines of text: a heading, the kernel's words, then the cluster's facts. */
export function resultLines(action: ActionName, result: ActionResult): string[] {
  const { title, said, more, cluster } = resultParts(action, result);
  return [title, ...said, ...more, ...(cluster ? [cluster] : [])];
}

/** A result in parts: what is always shown, and `more`, the rest of the kernel's words, shown on
 * a click where an action worked (a CPU cluster's start says why there is no GPU: in a 250 px
 * sidebar, ten lines above the view's own one-line note of it, all workshop long). */
export interface ResultParts {
  title: string;
  said: string[];
  more: string[];
  cluster: string | null;
}

export function resultParts(action: ActionName, result: ActionResult): ResultParts {
  const name = action[0].toUpperCase() + action.slice(1);
  const title = result.ok ? `${name}: done.` : `${name} failed.`;
  const words = result.text
    .split('\n')
    .map(line => line.trim())
    .filter(line => line !== '');
  const shown = result.ok ? 1 : words.length; // a failure's every word counts
  const c = result.cluster;
  let cluster: string | null = null;
  if (c) {
    const workers = `${c.workers} worker${c.workers === 1 ? '' : 's'}`;
    cluster = `Cluster: ${c.state} (${c.mode}), ${workers}, ${c.address}`;
  } else if (result.ok) {
    cluster = 'No cluster now.';
  }
  return { title, said: words.slice(0, shown), more: words.slice(shown), cluster };
}

/** A result read from untrusted JSON; null when it does not have the protocol's shape. */
export function parseResult(value: unknown): ActionResult | null {
  if (typeof value !== 'object' || value === null) {
    return null;
  }
  const v = value as Record<string, unknown>;
  if (typeof v.ok !== 'boolean' || typeof v.text !== 'string') {
    return null;
  }
  let cluster: ResultCluster | null = null;
  if (typeof v.cluster === 'object' && v.cluster !== null) {
    const c = v.cluster as Record<string, unknown>;
    cluster = {
      state: String(c.state ?? ''),
      mode: String(c.mode ?? ''),
      address: String(c.address ?? ''),
      workers: Number.isFinite(Number(c.workers)) ? Number(c.workers) : 0,
      dashboard: typeof c.dashboard === 'string' && c.dashboard ? c.dashboard : null
    };
  }
  // a kernel of an older release sends no time: its frames are taken at their word at once
  const time = typeof v.time === 'number' && Number.isFinite(v.time) ? v.time : 0;
  return { ok: v.ok, action: String(v.action ?? ''), text: v.text, cluster, time };
}

/**
 * A finished action's word on the cluster stands where the frames say otherwise, until a frame
 * sampled FRAME_GRACE seconds after the action ended (the kernel's clock: the result's `time`,
 * the frame's `time`), and never longer than SETTLE_SECONDS on the view's clock. A frame sampled
 * just after the end may still carry the cluster as the monitor last read it (a sidebar's
 * monitor reads the registry every half second and asks the scheduler every interval).
 */
export const FRAME_GRACE = 2;
export const SETTLE_SECONDS = 10;

/** The cluster a view shows, and its number of workers. */
export interface ShownCluster {
  cluster: ClusterInfo | null;
  workers: number;
}

function agrees(frames: ShownCluster, result: ActionResult): boolean {
  const said = result.cluster;
  const live = frames.cluster !== null && LIVE.has(frames.cluster.state);
  if (said === null) {
    return !live;
  }
  return live && frames.cluster?.address === said.address && frames.workers === said.workers;
}

/**
 * The cluster to show at `now`: the frames' (the latest sampled at `frameTime`), except right
 * after an action that worked, while the frames do not yet say what its result said. Without
 * this the header said "No Dask cluster: press Start" under "Start: done", with Start enabled,
 * for a second; the header, the buttons and the result now change in the same paint. A stopped
 * cluster's time is left to the frames (the kernel's clock, the same in every view).
 */
export function shownCluster(
  frames: ShownCluster,
  frameTime: number | null,
  phase: Phase,
  now: number
): ShownCluster {
  if (phase.kind !== 'done' || !phase.result.ok || now - phase.at > SETTLE_SECONDS) {
    return frames;
  }
  const { result } = phase;
  if (agrees(frames, result) || (frameTime !== null && frameTime >= result.time + FRAME_GRACE)) {
    return frames;
  }
  const said = result.cluster;
  if (said === null) {
    const last = frames.cluster;
    return last === null
      ? frames
      : { cluster: { ...last, state: 'stopped', stopped_at: null }, workers: frames.workers };
  }
  const state: ClusterState = LIVE.has(said.state) ? (said.state as ClusterState) : 'running';
  return {
    cluster: {
      state,
      mode: said.mode,
      address: said.address,
      dashboard: said.dashboard,
      message: '',
      stopped_at: null
    },
    workers: said.workers
  };
}

/** Seconds of an action that took `seconds`, for the result line. */
export function tookText(seconds: number): string {
  return `took ${formatSeconds(seconds)}`;
}

/**
 * One action at a time: `request` refuses while one is under way. `now` is injected so tests
 * drive the clock.
 */
export class ActionMachine {
  private phaseValue: Phase = { kind: 'idle' };
  private nextId = 1;

  constructor(private readonly now: () => number = () => Date.now() / 1000) {}

  get phase(): Phase {
    return this.phaseValue;
  }

  get busy(): boolean {
    return this.phaseValue.kind === 'waiting' || this.phaseValue.kind === 'running';
  }

  /** A new request's id, or null while another runs. */
  request(action: ActionName, n: number | null = null): number | null {
    if (this.busy) {
      return null;
    }
    const id = this.nextId++;
    this.phaseValue = { kind: 'waiting', id, action, n, since: this.now() };
    return id;
  }

  /** The kernel began the action (false: not the current request). */
  started(id: number): boolean {
    const p = this.phaseValue;
    if (p.kind !== 'waiting' || p.id !== id) {
      return false;
    }
    this.phaseValue = { ...p, kind: 'running' };
    return true;
  }

  /** The kernel's answer (false: not the current request). */
  finish(id: number, result: ActionResult): boolean {
    const p = this.phaseValue;
    if ((p.kind !== 'waiting' && p.kind !== 'running') || p.id !== id) {
      return false;
    }
    this.phaseValue = { kind: 'done', id, action: p.action, result, at: this.now() };
    return true;
  }

  /** The request cannot finish (the kernel went away): it ends as failed, with `why`. */
  abort(why: string): void {
    const p = this.phaseValue;
    if (p.kind === 'waiting' || p.kind === 'running') {
      const time = this.now();
      this.finish(p.id, { ok: false, action: p.action, text: why, cluster: null, time });
    }
  }

  /** Forget the last result (a new cluster in focus). */
  clear(): void {
    if (!this.busy) {
      this.phaseValue = { kind: 'idle' };
    }
  }
}
