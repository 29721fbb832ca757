/** "Start cluster": %gpu_cluster start in the focused notebook's kernel. */
import { KernelMessage, Kernel } from '@jupyterlab/services';

/** Loads the extension first when the magic is not there yet; never stored in the history. */
export const START_CLUSTER_CODE = [
  'import IPython as _ip',
  '_sh = _ip.get_ipython()',
  'if "gpu_cluster" not in _sh.magics_manager.magics["line"]:',
  '    _sh.run_line_magic("load_ext", "gpudask_jupyter")',
  '_sh.run_line_magic("gpu_cluster", "start")'
].join('\n');

export interface Outcome {
  ok: boolean;
  /** What the kernel printed, or the error's value. */
  text: string;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

/** Collects stream text and results of an execution, and its error if any. */
export function outcomeCollector(): {
  onIOPub: (msg: KernelMessage.IIOPubMessage) => void;
  outcome: (reply: KernelMessage.IExecuteReplyMsg['content'] | null) => Outcome;
} {
  const out: string[] = [];
  let error: string | null = null;
  return {
    onIOPub: msg => {
      if (KernelMessage.isStreamMsg(msg)) {
        out.push(msg.content.text);
      } else if (KernelMessage.isErrorMsg(msg)) {
        error = `${msg.content.ename}: ${msg.content.evalue}`;
      } else if (KernelMessage.isExecuteResultMsg(msg) || KernelMessage.isDisplayDataMsg(msg)) {
        const text = msg.content.data['text/plain'];
        if (typeof text === 'string') {
          out.push(text);
        }
      }
    },
    outcome: reply => {
      if (error === null && reply && reply.status === 'error') {
        error = `${reply.ename}: ${reply.evalue}`;
      }
      const text = (error ?? out.join('')).replace(ANSI, '').trim();
      return { ok: error === null, text: text || (error === null ? 'Started.' : 'Failed.') };
    }
  };
}

export async function startCluster(kernel: Kernel.IKernelConnection): Promise<Outcome> {
  const collector = outcomeCollector();
  try {
    const future = kernel.requestExecute({
      code: START_CLUSTER_CODE,
      silent: false,
      store_history: false
    });
    future.onIOPub = collector.onIOPub;
    const reply = await future.done;
    return collector.outcome(reply.content);
  } catch (error) {
    return { ok: false, text: error instanceof Error ? error.message : String(error) };
  }
}
