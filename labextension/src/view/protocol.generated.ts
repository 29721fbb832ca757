/**
 * Generated from gpudask_jupyter/schema/protocol.py by scripts/generate_ts.py: do not edit
 * (tests/cpu/test_schema.py checks it).
 */

import type { Frame } from './frame.generated';

/** Every action, in the order the views offer them. */
export const CONTROL_ACTIONS = ['start', 'stop', 'restart', 'scale', 'detach'] as const;

/** The module whose `run_json(action, n)` the sidebar runs in the kernel. */
export const CONTROL_MODULE = 'gpudask_jupyter.widget.sidebar_actions';

/** What the one line `run_json` prints starts with; the JSON of an ActionResult follows. */
export const RESULT_PREFIX = 'GPUDASK_CONTROL_RESULT ';

/** The panel widget's traits that the view and the kernel keep in step. */
export const PANEL_TRAITS = ['interval', 'paused', 'history', 'processes'] as const;

/**
 * A marker entry (an empty object) in the display bundle of the panel widget: a front end that
 * reopens a saved notebook knows the output was this panel even where its model is gone.
 */
export const PANEL_MIME = 'application/vnd.gpudask.panel+json';

/** GET ?kernel=&cursor=&interval=: the next Frame of that kernel's cluster. */
export const FRAME_ROUTE = 'gpudask/api/frame';

/** GET: the kernels that have a cluster, and whether this machine's GPUs are visible. */
export const KERNELS_ROUTE = 'gpudask/api/kernels';

/** A cluster action a view's button asks the kernel for. */
export type ControlAction = 'start' | 'stop' | 'restart' | 'scale' | 'detach';

/** A message from a view to the kernel. */
export type ViewMessage = HelloMessage | ByeMessage | ControlMessage;

/** A message from the kernel to a view. */
export type KernelMessage = FrameMessage | ControlStartedMessage | ControlResultMessage;

/** The kernel's cluster as it is after an action. */
export interface ResultCluster {
  /** "running" or "closed". */
  state: string;
  /** "gpu", "cpu", "attached", "joined" or "gateway". */
  mode: string;
  address: string;
  workers: number;
  dashboard: string | null;
}

/** What the kernel answers to an action. */
export interface ActionResult {
  ok: boolean;
  action: string;
  /** A few lines of plain words: what was done, or why not. */
  text: string;
  /** Empty (null) when the kernel has no cluster now. */
  cluster: ResultCluster | null;
  /**
   * When the action ended, seconds since the epoch on the kernel's clock: a view shows the result's
   * cluster until a frame sampled after this time says how it is.
   */
  time: number;
}

/** A view is drawn (or resumed): send it a snapshot, then frames. */
export interface HelloMessage {
  type: 'hello';
  /** Tells two views of one panel apart; without it, one bye stands for every view. */
  view?: string;
}

/** A view is gone: stop sending to it. */
export interface ByeMessage {
  type: 'bye';
  view?: string;
}

/** A button was pressed. */
export interface ControlMessage {
  type: 'control';
  id: number;
  action: ControlAction;
  /** Workers, for scale (required) and start (optional). */
  n?: number;
}

export interface FrameMessage {
  type: 'frame';
  frame: Frame;
}

/** The kernel begins an action; until then it waits behind a running cell. */
export interface ControlStartedMessage {
  type: 'control-started';
  id: number;
}

export interface ControlResultMessage extends ActionResult {
  type: 'control-result';
  id: number;
}
