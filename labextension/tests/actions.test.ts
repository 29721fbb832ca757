import { describe, expect, it } from 'vitest';
import {
  ActionMachine,
  WAIT_HINT_SECONDS,
  offers,
  parseResult,
  progressText,
  resultLines
} from '../src/view/actions';
import type { ClusterInfo } from '../src/view/frame';

function cluster(overrides: Partial<ClusterInfo> = {}): ClusterInfo {
  return {
    state: 'running',
    mode: 'cpu',
    address: 'tcp://127.0.0.1:8786',
    dashboard: null,
    message: '',
    stopped_at: null,
    ...overrides
  };
}

const idle = { kind: 'idle' } as const;

describe('which actions are offered', () => {
  it('offers Start only when no cluster runs', () => {
    expect(offers(null, true, idle).start).toMatchObject({ visible: true, enabled: true });
    const running = offers(cluster(), true, idle);
    expect(running.start.enabled).toBe(false);
    expect(running.start.title).toContain('stop it first');
    for (const action of ['stop', 'restart', 'scale'] as const) {
      expect(running[action]).toMatchObject({ visible: true, enabled: true });
    }
    expect(running.detach.visible).toBe(false);
    const stopped = offers(cluster({ state: 'stopped', stopped_at: 1 }), true, idle);
    expect(stopped.start.enabled).toBe(true);
    expect(stopped.stop.visible).toBe(false);
  });

  it('offers Detach, not Stop or Scale, for an attached cluster', () => {
    const attached = offers(cluster({ mode: 'attached' }), true, idle);
    expect(attached.detach).toMatchObject({ visible: true, enabled: true });
    expect(attached.stop.visible).toBe(false);
    expect(attached.scale.visible).toBe(false);
    expect(attached.start.visible).toBe(false);
  });

  it('offers Stop (leave and disconnect), not Scale, Start or Detach, for a joined cluster', () => {
    const joined = offers(cluster({ mode: 'joined' }), true, idle);
    expect(joined.stop).toMatchObject({ visible: true, enabled: true });
    expect(joined.stop.title).toContain("Retire this kernel's workers");
    expect(joined.scale.visible).toBe(false);
    expect(joined.start.visible).toBe(false);
    expect(joined.detach.visible).toBe(false);
  });

  it('offers nothing enabled without a kernel or while an action runs', () => {
    expect(offers(null, false, idle).start).toMatchObject({
      enabled: false,
      title: 'No kernel to run it in.'
    });
    const busy = offers(cluster(), true, {
      kind: 'waiting',
      id: 1,
      action: 'stop',
      n: null,
      since: 0
    });
    expect(Object.values(busy).some(o => o.enabled)).toBe(false);
  });
});

describe('an action from request to result', () => {
  it('waits, runs, finishes, one at a time', () => {
    let now = 100;
    const machine = new ActionMachine(() => now);
    const id = machine.request('scale', 3)!;
    expect(machine.request('stop')).toBeNull(); // one at a time
    expect(progressText(machine.phase, now)).toBe('Scaling to 3 workers… 0 s');
    now += WAIT_HINT_SECONDS + 1;
    expect(progressText(machine.phase, now)).toContain('waiting for the cell that is running');
    expect(machine.started(id + 1)).toBe(false); // not this request
    expect(machine.started(id)).toBe(true);
    now += 1;
    expect(progressText(machine.phase, now)).toBe('Scaling to 3 workers… 3 s');
    const result = {
      ok: true,
      action: 'scale',
      text: 'Scaled to 3 workers.',
      cluster: { state: 'running', mode: 'cpu', address: 'tcp://x:1', workers: 3, dashboard: null },
      time: 100
    };
    expect(machine.finish(id, result)).toBe(true);
    expect(machine.phase).toMatchObject({ kind: 'done', action: 'scale', result });
    expect(machine.request('stop')).not.toBeNull();
  });

  it('fails the action under way when the kernel goes', () => {
    const machine = new ActionMachine(() => 0);
    machine.request('start');
    machine.abort('The kernel died.');
    expect(machine.phase).toMatchObject({
      kind: 'done',
      result: { ok: false, text: 'The kernel died.' }
    });
  });

  it('writes the result as structured text, errors in words', () => {
    expect(
      resultLines('stop', {
        ok: true,
        action: 'stop',
        text: 'Stopped the cluster.',
        cluster: null,
        time: 0
      })
    ).toEqual(['Stop: done.', 'Stopped the cluster.', 'No cluster now.']);
    expect(
      resultLines('start', {
        ok: true,
        action: 'start',
        text: '',
        cluster: {
          state: 'running',
          mode: 'cpu',
          address: 'tcp://a:1',
          workers: 1,
          dashboard: null
        },
        time: 0
      })
    ).toEqual(['Start: done.', 'Cluster: running (cpu), 1 worker, tcp://a:1']);
    expect(
      resultLines('scale', {
        ok: false,
        action: 'scale',
        text: 'No GPU for 9 workers.',
        cluster: null,
        time: 0
      })
    ).toEqual(['Scale failed.', 'No GPU for 9 workers.']);
  });

  it('reads results from untrusted JSON', () => {
    expect(parseResult({ ok: true, text: 'x', action: 'stop', cluster: null, time: 5 })).toEqual({
      ok: true,
      text: 'x',
      action: 'stop',
      cluster: null,
      time: 5
    });
    expect(parseResult({ ok: true, text: 'x', time: 'soon' })?.time).toBe(0);
    expect(parseResult({ ok: 'yes', text: 'x' })).toBeNull();
    expect(parseResult(null)).toBeNull();
    expect(
      parseResult({ ok: true, text: '', cluster: { workers: 'many', dashboard: 5 } })?.cluster
    ).toEqual({ state: '', mode: '', address: '', workers: 0, dashboard: null });
  });
});
