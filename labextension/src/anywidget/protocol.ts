/**
 * The widget's messages, as gpudask_jupyter/schema/protocol.py describes them (the wire types are
 * generated from it: ViewMessage, KernelMessage). The view says hello (send a snapshot) and bye
 * (stop sending to it), and sends a control per button; the kernel sends frames, and for each
 * control "control-started" when it begins (until then it waits behind a running cell) and
 * "control-result".
 */
import { ActionName, ActionResult, parseResult } from '../view/actions';
import type {
  ByeMessage,
  ControlMessage,
  HelloMessage,
  KernelMessage as WireMessage
} from '../view/protocol.generated';

/** A kernel message as the view uses it: the result of a control apart from its id. */
export type KernelMessage =
  | { type: 'frame'; frame: unknown }
  | { type: 'control-started'; id: number }
  | { type: 'control-result'; id: number; result: ActionResult };

let views = 0;

/** An id that tells this view apart from the panel's other views (another output view of the
 * same cell, or the view a re-render replaces): the kernel stops sending only to the view that
 * said bye. Unique within the page; the random part keeps two pages apart. */
export function newViewId(): string {
  views += 1;
  return `${views}-${Math.random().toString(36).slice(2, 10)}`;
}

export function helloMessage(view: string): HelloMessage {
  return { type: 'hello', view };
}

export function byeMessage(view: string): ByeMessage {
  return { type: 'bye', view };
}

export function controlMessage(id: number, action: ActionName, n: number | null): ControlMessage {
  return n === null ? { type: 'control', id, action } : { type: 'control', id, action, n };
}

/** A kernel message the view knows, or null (ignored: another version, another widget). */
export function parseKernelMessage(message: unknown): KernelMessage | null {
  if (typeof message !== 'object' || message === null) {
    return null;
  }
  const m = message as Record<string, unknown>;
  const type = m.type as WireMessage['type'];
  switch (type) {
    case 'frame':
      return { type, frame: m.frame };
    case 'control-started':
      return typeof m.id === 'number' ? { type, id: m.id } : null;
    case 'control-result': {
      const result = parseResult(m);
      return typeof m.id === 'number' && result ? { type, id: m.id, result } : null;
    }
    default:
      return null;
  }
}
