import { describe, expect, it } from 'vitest';
import { KernelMessage } from '@jupyterlab/services';
import { START_CLUSTER_CODE, outcomeCollector, startCluster } from '../src/lab/cluster';
import type { Kernel } from '@jupyterlab/services';

function iopub(msgType: string, content: Record<string, unknown>): KernelMessage.IIOPubMessage {
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

/** A kernel that answers requestExecute with the given iopub messages and reply. */
function fakeKernel(messages: KernelMessage.IIOPubMessage[], reply: Record<string, unknown>) {
  const requests: unknown[] = [];
  const kernel = {
    requestExecute(content: unknown) {
      requests.push(content);
      const future = {
        onIOPub: (_msg: KernelMessage.IIOPubMessage) => undefined as void,
        get done() {
          return Promise.resolve().then(() => {
            messages.forEach(m => future.onIOPub(m));
            return { content: reply };
          });
        }
      };
      return future;
    }
  };
  return { kernel: kernel as unknown as Kernel.IKernelConnection, requests };
}

describe('Start cluster', () => {
  it('runs the magic, loading the extension first, outside the history', async () => {
    const { kernel, requests } = fakeKernel(
      [iopub('stream', { name: 'stdout', text: '\u001b[32mGPU cluster\u001b[0m started\n' })],
      { status: 'ok', execution_count: null }
    );
    const outcome = await startCluster(kernel);
    expect(requests).toEqual([{ code: START_CLUSTER_CODE, silent: false, store_history: false }]);
    expect(START_CLUSTER_CODE).toContain('_sh.run_line_magic("load_ext", "gpudask_jupyter")');
    expect(START_CLUSTER_CODE.split('\n').at(-1)).toBe(
      '_sh.run_line_magic("gpu_cluster", "start")'
    );
    expect(outcome).toEqual({ ok: true, text: 'GPU cluster started' });
  });

  it('shows the error value when it fails', async () => {
    const { kernel } = fakeKernel(
      [
        iopub('stream', { name: 'stdout', text: 'trying\n' }),
        iopub('error', { ename: 'ClusterError', evalue: 'no GPU visible', traceback: [] })
      ],
      { status: 'error', ename: 'ClusterError', evalue: 'no GPU visible', traceback: [] }
    );
    expect(await startCluster(kernel)).toEqual({
      ok: false,
      text: 'ClusterError: no GPU visible'
    });
  });

  it('takes the error from the reply when no error message came', () => {
    const collector = outcomeCollector();
    expect(
      collector.outcome({
        status: 'error',
        ename: 'KeyboardInterrupt',
        evalue: 'interrupted',
        traceback: []
      } as never)
    ).toEqual({ ok: false, text: 'KeyboardInterrupt: interrupted' });
  });
});
