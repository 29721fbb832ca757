/**
 * Cluster actions in the focused notebook's kernel: the sidebar's ActionHost. It runs
 * `CONTROL_MODULE.run_json(action, n)` outside the history; the kernel prints one line
 * `RESULT_PREFIX <json>` with the result. The action counts as started when the kernel
 * turns busy with this request (before that it waits behind a running cell).
 */
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { ACTIONS, ActionName, ActionResult, parseResult } from '../view/actions';
import { CONTROL_MODULE, RESULT_PREFIX } from '../view/protocol.generated';
import type { ActionHost } from '../view/render';

/** The code run for `action` (validated: no user text reaches the kernel). */
export function controlCode(action: ActionName, n: number | null): string {
  if (!ACTIONS.includes(action)) {
    throw new Error(`unknown action ${String(action)}`);
  }
  const count = n === null ? 'None' : String(Math.max(0, Math.trunc(n)));
  return `import ${CONTROL_MODULE} as _gdc; _gdc.run_json("${action}", ${count})`;
}

/** The result line among what the kernel printed, or null. */
export function resultFromOutput(text: string): ActionResult | null {
  for (const line of text.split('\n').reverse()) {
    const at = line.indexOf(RESULT_PREFIX);
    if (at >= 0) {
      try {
        return parseResult(JSON.parse(line.slice(at + RESULT_PREFIX.length)));
      } catch {
        return null;
      }
    }
  }
  return null;
}

/** A Python error in words. */
export function errorWords(ename: string, evalue: string): string {
  const top = CONTROL_MODULE.split('.')[0];
  if (ename === 'ModuleNotFoundError' && evalue.includes(`'${top}.`)) {
    return (
      `This kernel's gpudask-jupyter has no panel actions (${CONTROL_MODULE} is missing): ` +
      'install the same gpudask-jupyter version in the kernel environment.'
    );
  }
  if (ename === 'ModuleNotFoundError' && evalue.includes(`'${top}'`)) {
    return (
      "gpudask-jupyter is not installed in this kernel's environment: pip install it there, " +
      'then restart the kernel.'
    );
  }
  return `${ename}: ${evalue}`;
}

export interface RunnerCallbacks {
  started(id: number): void;
  finished(id: number, result: ActionResult): void;
}

export class KernelActionHost implements ActionHost {
  constructor(
    private readonly kernel: () => Kernel.IKernelConnection | null,
    private readonly callbacks: RunnerCallbacks
  ) {}

  run(id: number, action: ActionName, n: number | null): void {
    void this.execute(id, action, n);
  }

  private async execute(id: number, action: ActionName, n: number | null): Promise<void> {
    const fail = (text: string): void =>
      this.callbacks.finished(id, {
        ok: false,
        action,
        text,
        cluster: null,
        time: Date.now() / 1000
      });
    const kernel = this.kernel();
    if (!kernel) {
      fail('No kernel to run it in: open a notebook with a running kernel.');
      return;
    }
    let out = '';
    let error: string | null = null;
    let started = false;
    try {
      const future = kernel.requestExecute({
        code: controlCode(action, n),
        silent: false,
        store_history: false
      });
      future.onIOPub = msg => {
        if (KernelMessage.isStatusMsg(msg) && msg.content.execution_state === 'busy' && !started) {
          started = true;
          this.callbacks.started(id);
        } else if (KernelMessage.isStreamMsg(msg) && msg.content.name === 'stdout') {
          out += msg.content.text;
        } else if (KernelMessage.isErrorMsg(msg)) {
          error = errorWords(msg.content.ename, msg.content.evalue);
        }
      };
      const reply = await future.done;
      const content = reply.content;
      if (error === null && content.status === 'error') {
        error = errorWords(content.ename, content.evalue);
      }
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      fail(`The kernel did not finish the action (${why}): it may have restarted.`);
      return;
    }
    const result = resultFromOutput(out);
    if (result) {
      this.callbacks.finished(id, result);
    } else {
      fail(
        error ?? 'The kernel answered without a result: is gpudask-jupyter the same version there?'
      );
    }
  }
}
