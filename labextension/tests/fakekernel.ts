/** A kernel connection for tests: status signals, and requestExecute answered by a script. */
import { Signal } from '@lumino/signaling';
import type { Kernel, KernelMessage } from '@jupyterlab/services';

export function iopub(
  msgType: string,
  content: Record<string, unknown>
): KernelMessage.IIOPubMessage {
  // the message as it comes off the wire: isStreamMsg and friends read header.msg_type
  return {
    channel: 'iopub',
    header: {
      msg_type: msgType,
      msg_id: 'm',
      session: 's',
      username: '',
      date: '',
      version: '5.3'
    },
    parent_header: {},
    metadata: {},
    content
  } as unknown as KernelMessage.IIOPubMessage;
}

export interface Script {
  /** What the kernel publishes while it runs the request. */
  messages: KernelMessage.IIOPubMessage[];
  reply: Record<string, unknown>;
  /** Resolve the reply only when this promise does (a busy kernel). */
  gate?: Promise<void>;
  /** The reply fails (the kernel restarted). */
  reject?: Error;
}

export class FakeKernel {
  readonly statusChanged = new Signal<this, Kernel.Status>(this);
  readonly connectionStatusChanged = new Signal<this, Kernel.ConnectionStatus>(this);
  status: Kernel.Status = 'idle';
  readonly requests: { code: string; silent: boolean; store_history: boolean }[] = [];
  script: Script = { messages: [], reply: { status: 'ok' } };

  constructor(readonly id = 'kernel-1') {}

  setStatus(status: Kernel.Status): void {
    this.status = status;
    this.statusChanged.emit(status);
  }

  requestExecute(content: { code: string; silent: boolean; store_history: boolean }) {
    this.requests.push(content);
    const script = this.script;
    const future = {
      onIOPub: (_msg: KernelMessage.IIOPubMessage): void => undefined,
      done: (async () => {
        await (script.gate ?? Promise.resolve());
        script.messages.forEach(m => future.onIOPub(m));
        if (script.reject) {
          throw script.reject;
        }
        return { content: script.reply };
      })()
    };
    return future;
  }

  get connection(): Kernel.IKernelConnection {
    return this as unknown as Kernel.IKernelConnection;
  }
}
