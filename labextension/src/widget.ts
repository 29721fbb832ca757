/**
 * The anywidget front end of gpudask_jupyter.widget.Panel, bundled by esbuild into
 * gpudask_jupyter/widget/static/panel.js (CSS included: one file, nothing fetched at runtime).
 *
 * Protocol (anywidget/protocol.ts): the view says hello and the kernel answers with a snapshot,
 * then frames; cluster actions go as "control" messages and come back as "control-started" and
 * "control-result"; a view that goes away says bye. Each view sends its own id with both, so
 * the bye of one (a closed output view, the view a re-render replaces) does not stop the frames
 * of another. Synced traits: PANEL_TRAITS. The view says within two seconds when its kernel
 * restarted, died or closed the panel (anywidget/kernelwatch.ts, and the view's frame watchdog
 * where the host shows nothing).
 */
import type { AnyModel, RenderProps } from '@anywidget/types';
import {
  byeMessage,
  controlMessage,
  helloMessage,
  newViewId,
  parseKernelMessage
} from './anywidget/protocol';
import { watchKernel } from './anywidget/kernelwatch';
import { PANEL_TRAITS } from './view/protocol.generated';
import { Controls, GpuDaskView } from './view/render';

export interface PanelTraits {
  interval: number;
  paused: boolean;
  history: number;
  processes: boolean;
  [key: string]: unknown;
}

const TRAITS = PANEL_TRAITS;

function readTraits(model: AnyModel<PanelTraits>): Partial<Controls> {
  const controls: Partial<Controls> = {};
  for (const name of TRAITS) {
    const value = model.get(name);
    if (value !== undefined && value !== null) {
      Object.assign(controls, { [name]: value });
    }
  }
  return controls;
}

/** Send unless the comm is gone (a closed comm throws in some front ends). */
function trySend(model: AnyModel<PanelTraits>, content: object): void {
  try {
    model.send(content);
  } catch {
    // the kernel side is gone: there is nobody to tell
  }
}

/** Milliseconds a view waits for the snapshot its hello asked for before it asks again; each
 * further wait is twice as long, up to ASK_AGAIN_MAX_MS. */
export const ASK_AGAIN_MS = 2000;
export const ASK_AGAIN_MAX_MS = 60_000;
/** Asks in a row without the snapshot after which a view says that the kernel does not answer
 * it (2 + 4 + 8 s: long past any round trip to an idle kernel). */
export const UNHEARD_AFTER = 3;
export const UNHEARD_TEXT =
  'The kernel does not answer this panel: it is busy with a cell (it answers once the cell ' +
  "ends), or it no longer hears this page (run the panel's cell again). Until then the panel's " +
  'buttons may not reach the kernel.';

function isSnapshot(frame: unknown): boolean {
  return (frame as { kind?: unknown } | null)?.kind === 'snapshot';
}

function render({ model, el }: Pick<RenderProps<PanelTraits>, 'model' | 'el'>): () => void {
  const id = newViewId();
  // A hello can be lost on the way (a kernel drops a message for a subshell it does not know):
  // frames that keep coming without the snapshot it asked for say so, and the view asks again.
  // A kernel busy with a cell answers all the hellos queued at once, hence the growing wait
  // between them. Asks unanswered for long: the view says the kernel is busy or does not hear it.
  let snapshotSeen = false;
  let asked = 0;
  let wait = ASK_AGAIN_MS;
  let unanswered = 0; // asks in a row that brought no snapshot
  const hello = (): void => {
    snapshotSeen = false;
    asked = Date.now();
    trySend(model, helloMessage(id));
  };

  // The traits are the truth: the view follows them, whoever changed them (a control, Python).
  const follow = (): void => {
    const wasPaused = view.currentControls.paused;
    view.setControls(readTraits(model));
    if (wasPaused && !view.currentControls.paused) {
      hello(); // resume from a fresh snapshot, not from the frames skipped while paused
    }
  };

  const view = new GpuDaskView(el, {
    controls: readTraits(model),
    watchFrames: true,
    onControl: change => {
      for (const [name, value] of Object.entries(change)) {
        model.set(name, value);
      }
      model.save_changes();
      follow(); // Backbone fires change events for local sets too; this covers models that do not
    }
  });
  view.setActionHost({
    run: (id, action, n) => trySend(model, controlMessage(id, action, n))
  });

  const onMessage = (message: unknown): void => {
    const parsed = parseKernelMessage(message);
    if (parsed?.type === 'frame') {
      if (!view.update(parsed.frame)) {
        return; // a paused view takes no frame, and asks for none: it says hello as it resumes
      }
      if (isSnapshot(parsed.frame)) {
        snapshotSeen = true;
        wait = ASK_AGAIN_MS;
        if (unanswered >= UNHEARD_AFTER) {
          view.setHostMessages([]);
        }
        unanswered = 0;
      } else if (!snapshotSeen && Date.now() - asked >= wait) {
        wait = Math.min(wait * 2, ASK_AGAIN_MAX_MS);
        unanswered += 1;
        if (unanswered === UNHEARD_AFTER) {
          view.setHostMessages([UNHEARD_TEXT]);
        }
        hello();
      }
    } else if (parsed?.type === 'control-started') {
      view.actionStarted(parsed.id);
    } else if (parsed?.type === 'control-result') {
      view.actionFinished(parsed.id, parsed.result);
    }
  };

  model.on('msg:custom', onMessage);
  for (const name of TRAITS) {
    model.on(`change:${name}`, follow);
  }
  const unwatch = watchKernel(model, liveness => {
    view.setLiveness(liveness);
    if (liveness.kind === 'live') {
      hello(); // back after a lost connection: start again from a snapshot
    }
  });
  hello();

  return () => {
    trySend(model, byeMessage(id));
    unwatch();
    model.off('msg:custom', onMessage);
    for (const name of TRAITS) {
      model.off(`change:${name}`, follow);
    }
    view.dispose();
  };
}

export default { render };
