/**
 * The widget's messages. View → kernel: {type: "hello"} (send a snapshot), {type: "bye"} (this
 * view is gone: stop sending to it), {type: "control", id, action, n?}. Kernel → view:
 * {type: "frame", frame}, {type: "control-started", id} when the kernel begins an action (until
 * then it waits behind a running cell), {type: "control-result", id, ok, action, text, cluster}.
 */
import { ActionName, ActionResult, parseResult } from '../view/actions';

export type KernelMessage =
  | { type: 'frame'; frame: unknown }
  | { type: 'control-started'; id: number }
  | { type: 'control-result'; id: number; result: ActionResult };

export const HELLO = { type: 'hello' } as const;
export const BYE = { type: 'bye' } as const;

export function controlMessage(
  id: number,
  action: ActionName,
  n: number | null
): { type: 'control'; id: number; action: ActionName; n?: number } {
  return n === null ? { type: 'control', id, action } : { type: 'control', id, action, n };
}

/** A kernel message the view knows, or null (ignored: another version, another widget). */
export function parseKernelMessage(message: unknown): KernelMessage | null {
  if (typeof message !== 'object' || message === null) {
    return null;
  }
  const m = message as Record<string, unknown>;
  switch (m.type) {
    case 'frame':
      return { type: 'frame', frame: m.frame };
    case 'control-started':
      return typeof m.id === 'number' ? { type: 'control-started', id: m.id } : null;
    case 'control-result': {
      const result = parseResult(m);
      return typeof m.id === 'number' && result
        ? { type: 'control-result', id: m.id, result }
        : null;
    }
    default:
      return null;
  }
}
