/**
 * The notebook in focus and its kernel: `changed` fires when another notebook gets the focus or
 * the focused notebook's session or kernel changes. Shared by the sidebar and the main panels.
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

/** What a panel needs to know about the focus (tests give their own). */
export interface Focus {
  readonly changed: ISignal<unknown, void>;
  /** Whether a notebook is in focus. */
  readonly hasNotebook: boolean;
  /** The focused notebook's widget id ("" when none): same notebook, same id across restarts. */
  readonly notebookId: string;
  readonly kernel: Kernel.IKernelConnection | null;
  readonly kernelId: string;
}

export class NotebookFocus implements Focus {
  private readonly changedSignal = new Signal<this, void>(this);
  private watched: NotebookPanel | null = null;
  private disposed = false;

  constructor(private readonly tracker: INotebookTracker) {
    tracker.currentChanged.connect(this.follow, this);
    this.follow();
  }

  get changed(): ISignal<this, void> {
    return this.changedSignal;
  }

  get notebook(): NotebookPanel | null {
    return this.tracker.currentWidget;
  }

  get hasNotebook(): boolean {
    return this.notebook !== null;
  }

  get notebookId(): string {
    return this.notebook?.id ?? '';
  }

  get kernel(): Kernel.IKernelConnection | null {
    return this.notebook?.sessionContext.session?.kernel ?? null;
  }

  /** The focused notebook's kernel id, or "" (none in focus, or no kernel yet). */
  get kernelId(): string {
    return this.kernel?.id ?? '';
  }

  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    this.tracker.currentChanged.disconnect(this.follow, this);
    this.watch(null);
    Signal.clearData(this);
  }

  private follow(): void {
    this.watch(this.tracker.currentWidget);
    this.changedSignal.emit();
  }

  private watch(panel: NotebookPanel | null): void {
    if (this.watched) {
      this.watched.sessionContext.kernelChanged.disconnect(this.emit, this);
      this.watched.sessionContext.sessionChanged.disconnect(this.emit, this);
    }
    this.watched = panel;
    if (panel) {
      panel.sessionContext.kernelChanged.connect(this.emit, this);
      panel.sessionContext.sessionChanged.connect(this.emit, this);
    }
  }

  private emit(): void {
    this.changedSignal.emit();
  }
}
