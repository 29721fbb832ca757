/**
 * Whether the widget's kernel is still there, from what the widget front end lets us see: the
 * model's comm closing ("comm:close": the kernel closed the panel, or shut down), and the
 * kernel's status where the widget manager exposes the kernel (JupyterLab, Notebook 7: it says
 * "restarting" at once). The frame watchdog of the view covers hosts that show neither.
 * ("comm_live_update" is not used: ipywidgets fires it for a live comm too, and the proxy
 * anywidget gives a view cannot read which.)
 */
import { Liveness, LIVE, kernelStatusText, restartedText } from '../view/liveness';

export const CLOSED_TEXT =
  'This panel is no longer connected to its kernel (the kernel restarted or shut down, or the ' +
  'panel was closed): run its cell again for a live panel.';

interface Signal<T> {
  connect(slot: (sender: unknown, value: T) => void, thisArg?: unknown): boolean;
  disconnect(slot: (sender: unknown, value: T) => void, thisArg?: unknown): boolean;
}

interface KernelLike {
  status?: string;
  statusChanged?: Signal<string>;
  connectionStatusChanged?: Signal<string>;
}

interface ModelLike {
  on(name: string, callback: (...args: unknown[]) => void): void;
  off(name: string, callback: (...args: unknown[]) => void): void;
  widget_manager?: unknown;
}

function isSignal<T>(value: unknown): value is Signal<T> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Signal<T>).connect === 'function' &&
    typeof (value as Signal<T>).disconnect === 'function'
  );
}

/** The kernel behind the widget manager, if it exposes one with status signals. */
export function managerKernel(model: ModelLike): KernelLike | null {
  const manager = model.widget_manager as { kernel?: unknown } | null | undefined;
  let kernel: unknown;
  try {
    kernel = manager?.kernel;
  } catch {
    return null; // a manager whose kernel getter throws when there is none
  }
  if (typeof kernel !== 'object' || kernel === null) {
    return null;
  }
  return isSignal((kernel as KernelLike).statusChanged) ? (kernel as KernelLike) : null;
}

/** Calls `onChange` as the kernel goes or comes back; returns the function that stops watching. */
export function watchKernel(
  model: ModelLike,
  onChange: (liveness: Liveness) => void,
  now: () => number = () => Date.now() / 1000
): () => void {
  let ended = false; // restarted or dead: this panel's model is gone for good
  let restarting = false;
  let disconnected = false;
  const closed = (): void => {
    ended = true;
    onChange({ kind: 'gone', text: CLOSED_TEXT, at: now() });
  };
  model.on('comm:close', closed);
  const kernel = managerKernel(model);
  const onStatus = (_: unknown, status: string): void => {
    const text = kernelStatusText(status);
    if (restarting && (status === 'idle' || status === 'busy')) {
      // the restart is over: say so in the past tense, not "restarting" for ever
      restarting = false;
      onChange({
        kind: 'gone',
        text: `${restartedText(now())} This panel stopped: run its cell again.`,
        at: now()
      });
      return;
    }
    if (text !== null) {
      restarting = status === 'restarting' || status === 'autorestarting';
      ended = true;
      onChange({
        kind: 'gone',
        text: `${text} This panel stopped: run its cell again.`,
        at: now()
      });
    }
  };
  const onConnection = (_: unknown, status: string): void => {
    if (status === 'connected' && disconnected && !ended) {
      disconnected = false;
      onChange(LIVE);
    } else if (status === 'disconnected' && !ended) {
      disconnected = true;
      onChange({ kind: 'gone', text: kernelStatusText(status) ?? status, at: now() });
    }
  };
  kernel?.statusChanged?.connect(onStatus);
  if (isSignal<string>(kernel?.connectionStatusChanged)) {
    kernel.connectionStatusChanged.connect(onConnection);
  }
  return () => {
    model.off('comm:close', closed);
    kernel?.statusChanged?.disconnect(onStatus);
    if (isSignal<string>(kernel?.connectionStatusChanged)) {
      kernel.connectionStatusChanged.disconnect(onConnection);
    }
  };
}
