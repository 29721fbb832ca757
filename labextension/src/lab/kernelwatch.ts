/**
 * The focused kernel's liveness for the sidebar and the main-area panel: its status
 * (restarting, dead) and its connection (disconnected) from JupyterLab's services, as the view's
 * Liveness. Follows the kernel it is given; one at a time.
 */
import type { Kernel } from '@jupyterlab/services';
import { LIVE, Liveness, kernelStatusText } from '../view/liveness';

export class KernelWatch {
  private kernel: Kernel.IKernelConnection | null = null;
  private last = '';

  constructor(
    private readonly onChange: (liveness: Liveness) => void,
    private readonly now: () => number = () => Date.now() / 1000
  ) {}

  /** Follow `kernel` (null: none); says at once what its current status means. */
  watch(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === this.kernel) {
      return;
    }
    this.unwatch();
    this.kernel = kernel;
    this.last = '';
    if (kernel) {
      kernel.statusChanged.connect(this.onStatus, this);
      kernel.connectionStatusChanged.connect(this.onConnection, this);
      this.onStatus(kernel, kernel.status);
    }
  }

  dispose(): void {
    this.unwatch();
  }

  private unwatch(): void {
    if (this.kernel) {
      this.kernel.statusChanged.disconnect(this.onStatus, this);
      this.kernel.connectionStatusChanged.disconnect(this.onConnection, this);
      this.kernel = null;
    }
  }

  /** Tell the view only what changed (busy and idle alternate with every cell). */
  private emit(liveness: Liveness): void {
    const key = liveness.kind === 'gone' ? `gone:${liveness.text}` : liveness.kind;
    if (key !== this.last) {
      this.last = key;
      this.onChange(liveness);
    }
  }

  private onStatus(_: unknown, status: Kernel.Status): void {
    const text = kernelStatusText(status);
    if (text !== null) {
      this.emit({ kind: 'gone', text, at: this.now() });
    } else if (status === 'idle' || status === 'busy') {
      this.emit(LIVE);
    }
  }

  private onConnection(_: unknown, status: Kernel.ConnectionStatus): void {
    const text = kernelStatusText(status);
    if (text !== null) {
      this.emit({ kind: 'gone', text, at: this.now() });
    } else if (status === 'connected' && this.kernel?.status !== 'dead') {
      this.emit(LIVE);
    }
  }
}
