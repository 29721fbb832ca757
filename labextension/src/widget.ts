/**
 * The anywidget front end of gpudask_jupyter.widget.Panel, bundled by esbuild into
 * gpudask_jupyter/widget/static/panel.js (CSS included: one file, nothing fetched at runtime).
 *
 * Protocol: the view says {type: "hello"} and the kernel answers with a snapshot; then the kernel
 * sends {type: "frame", frame}. Synced traits: interval, paused, history, processes.
 */
import type { AnyModel, RenderProps } from '@anywidget/types';
import { Controls, GpuDaskView } from './view/render';

export interface PanelTraits {
  interval: number;
  paused: boolean;
  history: number;
  processes: boolean;
  [key: string]: unknown;
}

const TRAITS = ['interval', 'paused', 'history', 'processes'] as const;

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

function render({ model, el }: Pick<RenderProps<PanelTraits>, 'model' | 'el'>): () => void {
  const hello = (): void => model.send({ type: 'hello' });

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
    onControl: change => {
      for (const [name, value] of Object.entries(change)) {
        model.set(name, value);
      }
      model.save_changes();
      follow(); // Backbone fires change events for local sets too; this covers models that do not
    }
  });

  const onMessage = (message: unknown): void => {
    const content = message as { type?: unknown; frame?: unknown } | null;
    if (content && content.type === 'frame') {
      view.update(content.frame);
    }
  };

  model.on('msg:custom', onMessage);
  for (const name of TRAITS) {
    model.on(`change:${name}`, follow);
  }
  hello();

  return () => {
    model.off('msg:custom', onMessage);
    for (const name of TRAITS) {
      model.off(`change:${name}`, follow);
    }
    view.dispose();
  };
}

export default { render };
