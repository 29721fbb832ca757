import { describe, expect, it } from 'vitest';
import { KernelWatch } from '../src/lab/kernelwatch';
import { KernelActionHost, controlCode, errorWords, resultFromOutput } from '../src/lab/runner';
import type { ActionResult } from '../src/view/actions';
import type { Liveness } from '../src/view/liveness';
import { FakeKernel, iopub } from './fakekernel';
import { CONTROL_MODULE, RESULT_PREFIX } from '../src/view/protocol.generated';

const RESULT = {
  ok: true,
  action: 'scale',
  text: 'Scaled to 3 workers.',
  cluster: {
    state: 'running',
    mode: 'cpu',
    address: 'tcp://127.0.0.1:1',
    workers: 3,
    dashboard: null
  },
  time: 1700000000.5
};

function host(kernel: FakeKernel | null) {
  const events: (['started', number] | ['finished', number, ActionResult])[] = [];
  const runner = new KernelActionHost(() => kernel?.connection ?? null, {
    started: id => events.push(['started', id]),
    finished: (id, result) => events.push(['finished', id, result])
  });
  return { runner, events };
}

const settle = () => new Promise(resolve => setTimeout(resolve, 0));

describe('actions in the kernel', () => {
  it('runs the controls module with a validated action and count', () => {
    expect(controlCode('stop', null)).toBe(
      `import ${CONTROL_MODULE} as _gdc; _gdc.run_json("stop", None)`
    );
    expect(controlCode('scale', 3.7)).toContain('_gdc.run_json("scale", 3)');
    expect(() => controlCode('rm -rf' as never, null)).toThrow('unknown action');
  });

  it('reads the result line and ignores everything else printed', () => {
    const out = `noise\n${RESULT_PREFIX}${JSON.stringify(RESULT)}\nmore noise\n`;
    expect(resultFromOutput(out)).toEqual(RESULT);
    expect(resultFromOutput('nothing')).toBeNull();
    expect(resultFromOutput(`${RESULT_PREFIX}{not json`)).toBeNull();
  });

  it('says Python errors in words', () => {
    expect(errorWords('ModuleNotFoundError', "No module named 'gpudask_jupyter'")).toContain(
      'not installed'
    );
    // an older gpudask-jupyter in the kernel: the package is there, the controls module is not
    expect(errorWords('ModuleNotFoundError', "No module named 'gpudask_jupyter.magics'")).toContain(
      'install the same gpudask-jupyter version'
    );
    expect(errorWords('ValueError', 'bad')).toBe('ValueError: bad');
  });

  it('reports started when the kernel turns busy with it, then the result', async () => {
    const kernel = new FakeKernel();
    kernel.script = {
      messages: [
        iopub('status', { execution_state: 'busy' }),
        iopub('stream', { name: 'stdout', text: `${RESULT_PREFIX}${JSON.stringify(RESULT)}\n` }),
        iopub('status', { execution_state: 'idle' })
      ],
      reply: { status: 'ok' }
    };
    const { runner, events } = host(kernel);
    runner.run(7, 'scale', 3);
    await settle();
    expect(events).toEqual([
      ['started', 7],
      ['finished', 7, RESULT]
    ]);
    expect(kernel.requests[0].store_history).toBe(false);
  });

  it('fails in words without a kernel, without a result, or when the kernel restarts', async () => {
    const none = host(null);
    none.runner.run(1, 'start', null);
    await settle();
    expect(none.events[0]).toMatchObject(['finished', 1, { ok: false }]);

    const kernel = new FakeKernel();
    kernel.script = { messages: [], reply: { status: 'ok' } };
    const quiet = host(kernel);
    quiet.runner.run(2, 'stop', null);
    await settle();
    expect(quiet.events.at(-1)?.[2]).toMatchObject({
      ok: false,
      text: expect.stringContaining('without a result')
    });

    kernel.script = { messages: [], reply: {}, reject: new Error('Canceled future') };
    const restarted = host(kernel);
    restarted.runner.run(3, 'stop', null);
    await settle();
    expect(restarted.events.at(-1)?.[2]).toMatchObject({
      ok: false,
      text: expect.stringContaining('may have restarted')
    });
  });
});

describe("the focused kernel's liveness", () => {
  it('says when the kernel restarts, dies or disconnects, and when it is back', () => {
    const seen: Liveness[] = [];
    const watch = new KernelWatch(
      l => seen.push(l),
      () => 5
    );
    const kernel = new FakeKernel();
    watch.watch(kernel.connection);
    expect(seen).toEqual([{ kind: 'live' }]);
    kernel.setStatus('busy');
    kernel.setStatus('idle');
    expect(seen).toHaveLength(1); // busy and idle are both live: said once
    kernel.setStatus('restarting');
    expect(seen.at(-1)).toMatchObject({ kind: 'gone', at: 5 });
    kernel.setStatus('idle');
    expect(seen.at(-1)).toEqual({ kind: 'live' });
    kernel.connectionStatusChanged.emit('disconnected');
    expect(seen.at(-1)).toMatchObject({ kind: 'gone', text: 'Lost the connection to the kernel.' });
    kernel.connectionStatusChanged.emit('connected');
    expect(seen.at(-1)).toEqual({ kind: 'live' });
    kernel.setStatus('dead');
    expect(seen.at(-1)).toMatchObject({ kind: 'gone', text: expect.stringContaining('died') });

    watch.watch(null); // another notebook, without a kernel: the old one is not followed
    const count = seen.length;
    kernel.setStatus('restarting');
    expect(seen).toHaveLength(count);
    watch.dispose();
  });
});
