/**
 * Panels of a kernel session that has ended, in a saved notebook reopened with a new kernel: the
 * widget manager (@jupyter-widgets/jupyterlab-manager, checked on 5.0) finds no model for the
 * output and writes "Error displaying widget: model not found" in its place. In the outputs the
 * kernel marked as a panel's (PANEL_MIME in the display bundle), that text becomes a sentence
 * that says what the output was and how to see it live again. Other widgets' outputs are left
 * alone. Only the marked outputs are watched, each by a MutationObserver on the node the widget
 * manager writes into (its children only, not the live view's subtree), disconnected when the
 * output goes away.
 */
import type { CodeCell } from '@jupyterlab/cells';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { ISignal } from '@lumino/signaling';
import type { Widget } from '@lumino/widgets';
import { PANEL_MIME } from '../view/protocol.generated';

/** What the widget manager writes where the kernel has no model for a widget's output. */
export const MODEL_NOT_FOUND = 'Error displaying widget: model not found';

/** What a panel's output says instead. */
export const ENDED =
  'The GPU panel of a kernel session that has ended: run this cell again to see it live.';

/** The class of an output that says ENDED. */
export const ENDED_CLASS = 'gpudask-ended';

/** JupyterLab's class of the node a renderer draws an output into. */
const OUTPUT_CLASS = 'jp-OutputArea-output';

/** What is read of JupyterLab's OutputArea (tests give their own). */
export interface OutputAreaLike {
  readonly model: {
    readonly length: number;
    get(index: number): { readonly data: Readonly<Record<string, unknown>> };
    readonly changed: ISignal<unknown, unknown>;
  };
  /** One child per output, in the model's order. */
  readonly widgets: ReadonlyArray<Widget>;
  readonly disposed: ISignal<unknown, unknown>;
  readonly isDisposed: boolean;
}

/** Replace the widget manager's error in `node` (a panel's output) by ENDED. */
export function replaceError(node: HTMLElement): boolean {
  if (node.textContent !== MODEL_NOT_FOUND) {
    return false;
  }
  node.textContent = ENDED;
  node.classList.add(ENDED_CLASS);
  return true;
}

/** The node an output's renderer writes into: the child itself, or its renderer's node. */
function rendererNode(child: Widget): HTMLElement | null {
  if (child.node.classList.contains(OUTPUT_CLASS)) {
    return child.node;
  }
  return child.node.querySelector<HTMLElement>(`:scope > .${OUTPUT_CLASS}`);
}

/** Watches the outputs of one output area that are marked as a panel's, while it lives. */
export class PanelOutputs {
  private readonly observers = new Map<Widget, MutationObserver>();

  constructor(private readonly area: OutputAreaLike) {
    area.model.changed.connect(this.scan, this);
    area.disposed.connect(this.dispose, this);
    this.scan();
  }

  /** How many outputs are watched now. */
  get watched(): number {
    return this.observers.size;
  }

  dispose(): void {
    this.area.model.changed.disconnect(this.scan, this);
    this.area.disposed.disconnect(this.dispose, this);
    for (const observer of this.observers.values()) {
      observer.disconnect();
    }
    this.observers.clear();
  }

  /** Follow the outputs as they are now (after any change of the area's model). */
  private scan(): void {
    if (this.area.isDisposed) {
      this.dispose();
      return;
    }
    const { model, widgets } = this.area;
    const marked = new Set<Widget>();
    for (let index = 0; index < Math.min(model.length, widgets.length); index++) {
      if (PANEL_MIME in model.get(index).data) {
        marked.add(widgets[index]);
      }
    }
    for (const [child, observer] of this.observers) {
      if (!marked.has(child) || child.isDisposed) {
        observer.disconnect();
        this.observers.delete(child);
      }
    }
    for (const child of marked) {
      if (!this.observers.has(child) && !child.isDisposed) {
        this.observe(child);
      }
    }
  }

  private observe(child: Widget): void {
    const node = rendererNode(child);
    if (node === null) {
      return; // no renderer (an output JupyterLab could not render): nothing writes there
    }
    const observer = new MutationObserver(() => replaceError(node));
    observer.observe(node, { childList: true });
    this.observers.set(child, observer);
    replaceError(node); // written before it was watched
  }
}

/** The output area of a notebook cell, or null for cells without outputs. */
function outputArea(cell: { model: { type: string } }): OutputAreaLike | null {
  return cell.model.type === 'code' ? (cell as CodeCell).outputArea : null;
}

/** Watch the panel outputs of every cell of `panel`'s notebook, those added later included. */
function watchNotebook(panel: NotebookPanel): void {
  const notebook = panel.content;
  const watched = new WeakSet<OutputAreaLike>();
  const scan = (): void => {
    for (const cell of notebook.widgets) {
      const area = outputArea(cell);
      if (area !== null && !watched.has(area)) {
        watched.add(area);
        new PanelOutputs(area);
      }
    }
  };
  const follow = (): void => {
    notebook.model?.cells.changed.connect(scan); // after the notebook's own: the cells exist
    scan();
  };
  notebook.modelChanged.connect(follow);
  follow();
}

/** Watch the panel outputs of every notebook the tracker has, now and later. */
export function watchEndedPanels(tracker: INotebookTracker): void {
  tracker.forEach(watchNotebook);
  tracker.widgetAdded.connect((_, panel) => watchNotebook(panel));
}
