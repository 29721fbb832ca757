// @vitest-environment jsdom
/**
 * The header, the buttons and an action's result change in the same frame: the view shows what
 * the result said until the frames say it too; a refusal of the scale box stays until the box
 * changes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActionResult, FRAME_GRACE, SETTLE_SECONDS, shownCluster } from '../src/view/actions';
import { ActionHost, GpuDaskView } from '../src/view/render';
import { T0, frame, worker } from './fixtures';

let container: HTMLElement;
const ADDRESS = 'tcp://127.0.0.1:8786';

beforeEach(() => {
  container = document.createElement('div');
  document.body.append(container);
});

afterEach(() => document.body.replaceChildren());

/** A view with a host that records what it was asked to run. */
function viewWithHost(): { view: GpuDaskView; asked: [number, string, number | null][] } {
  const view = new GpuDaskView(container);
  const asked: [number, string, number | null][] = [];
  const host: ActionHost = { run: (id, action, n) => asked.push([id, action, n]) };
  view.setActionHost(host);
  return { view, asked };
}

function painted(view: GpuDaskView): HTMLElement {
  view.flush();
  return view.root;
}

const header = (node: HTMLElement): string =>
  node.querySelector('.gpudask-cluster-text')?.textContent ?? '';
const status = (node: HTMLElement): string =>
  node.querySelector('.gpudask-action-status')?.textContent ?? '';
const button = (node: HTMLElement, action: string): HTMLButtonElement =>
  node.querySelector<HTMLButtonElement>(`.gpudask-${action}`)!;

function running(workers: number): ActionResult['cluster'] {
  return { state: 'running', mode: 'cpu', address: ADDRESS, workers, dashboard: null };
}

const noCluster = { cluster: null, tasks: [], workers: [], progress: [] };
const twoWorkers = [worker(`${ADDRESS}1`, '0'), worker(`${ADDRESS}2`, '1')];
const cpuCluster = {
  state: 'running' as const,
  mode: 'cpu',
  address: ADDRESS,
  dashboard: null,
  message: '',
  stopped_at: null
};

describe('the state after an action', () => {
  it('says running, disables Start and shows the result in one paint after Start', () => {
    const { view, asked } = viewWithHost();
    view.update(frame(noCluster));
    let node = painted(view);
    expect(header(node)).toContain('No Dask cluster');
    button(node, 'start').click();
    const [id] = asked[0];
    view.actionFinished(id, {
      ok: true,
      action: 'start',
      text: 'Started.',
      cluster: running(2),
      time: T0 + 0.5
    });
    node = painted(view); // one paint: no frame came since
    expect(status(node)).toContain('Start: done.');
    expect(header(node)).toBe(`Cluster running (cpu), 2 workers, at ${ADDRESS}`);
    expect(button(node, 'start').disabled).toBe(true);
    expect(button(node, 'stop').disabled).toBe(false);
    // a frame sampled before the start ended does not bring back "No Dask cluster"
    view.update(frame({ ...noCluster, time: T0 + 1 }));
    expect(header(painted(view))).toContain('Cluster running (cpu), 2 workers');
    // the frames agree: theirs is shown from then on
    view.update(frame({ time: T0 + 2, cluster: cpuCluster, workers: twoWorkers }));
    expect(header(painted(view))).toBe(`Cluster running (cpu), 2 workers, at ${ADDRESS}`);
  });

  it('says stopped and offers Start in one paint after Stop', () => {
    const { view, asked } = viewWithHost();
    view.update(frame({ cluster: cpuCluster, workers: twoWorkers }));
    button(painted(view), 'stop').click();
    view.actionFinished(asked[0][0], {
      ok: true,
      action: 'stop',
      text: 'Cluster stopped.',
      cluster: null,
      time: T0 + 0.5
    });
    const node = painted(view);
    expect(status(node)).toContain('Stop: done.');
    expect(header(node)).toMatch(/^Cluster stopped \(cpu/);
    expect(node.classList.contains('gpudask-stopped')).toBe(true);
    expect(button(node, 'stop').hidden).toBe(true);
    expect(button(node, 'start').disabled).toBe(false);
  });

  it('keeps a stopped history greyed under a new cluster the frames do not carry yet', () => {
    const { view, asked } = viewWithHost();
    const old = { ...cpuCluster, address: 'tls://127.0.0.1:1', state: 'stopped' as const };
    view.update(frame({ cluster: { ...old, stopped_at: T0 - 5 }, workers: twoWorkers }));
    let node = painted(view);
    expect(node.classList.contains('gpudask-stopped')).toBe(true);
    button(node, 'start').click();
    view.actionFinished(asked[0][0], {
      ok: true,
      action: 'start',
      text: 'Started.',
      cluster: running(2),
      time: T0 + 0.5
    });
    node = painted(view);
    expect(header(node)).toBe(`Cluster running (cpu), 2 workers, at ${ADDRESS}`);
    expect(node.classList.contains('gpudask-stopped')).toBe(true); // the old work below
    view.update(frame({ time: T0 + 1, cluster: cpuCluster, workers: twoWorkers }));
    expect(painted(view).classList.contains('gpudask-stopped')).toBe(false);
  });

  it('says the new number of workers in one paint after Scale', () => {
    const { view, asked } = viewWithHost();
    view.update(frame({ cluster: cpuCluster, workers: twoWorkers }));
    const node = painted(view);
    node.querySelector<HTMLInputElement>('.gpudask-scale-input')!.value = '1';
    node.querySelector<HTMLButtonElement>('.gpudask-scale .gpudask-button')!.click();
    expect(asked[0].slice(1)).toEqual(['scale', 1]);
    view.actionFinished(asked[0][0], {
      ok: true,
      action: 'scale',
      text: '',
      cluster: running(1),
      time: T0 + 0.5
    });
    expect(header(painted(view))).toBe(`Cluster running (cpu), 1 worker, at ${ADDRESS}`);
  });

  it('leaves a failure, an old result and frames sampled after it to the frames', () => {
    const frames = { cluster: null, workers: 0 };
    const done = (ok: boolean, at: number) =>
      ({
        kind: 'done',
        id: 1,
        action: 'start',
        at,
        result: { ok, action: 'start', text: '', cluster: running(1), time: 100 }
      }) as const;
    expect(shownCluster(frames, 100, done(false, 100), 100)).toBe(frames);
    expect(shownCluster(frames, 100, done(true, 100), 100 + SETTLE_SECONDS + 1)).toBe(frames);
    expect(shownCluster(frames, 101, done(true, 100), 101).cluster?.state).toBe('running');
    // a frame sampled well after the start that still has no cluster: the cluster went since
    expect(shownCluster(frames, 100 + FRAME_GRACE, done(true, 100), 101)).toBe(frames);
  });
});

describe('a refused number of workers', () => {
  it('stays while the box holds it, through frames, and goes when the box changes', () => {
    const { view, asked } = viewWithHost();
    view.update(frame({ cluster: cpuCluster, workers: twoWorkers }));
    let node = painted(view);
    const box = node.querySelector<HTMLInputElement>('.gpudask-scale-input')!;
    const scale = node.querySelector<HTMLButtonElement>('.gpudask-scale .gpudask-button')!;
    box.value = '1';
    scale.click();
    view.actionFinished(asked[0][0], {
      ok: true,
      action: 'scale',
      text: '',
      cluster: running(2),
      time: T0 + 0.5
    });
    expect(status(painted(view))).toContain('Scale: done.');

    box.value = '-3';
    scale.click();
    const refusal = 'Scale: give a whole number of workers, 0 to 1024.';
    expect(status(painted(view))).toBe(refusal);
    for (let i = 1; i <= 3; i++) {
      view.update(frame({ time: T0 + i, cluster: cpuCluster, workers: twoWorkers }));
      node = painted(view);
      expect(status(node)).toBe(refusal);
      expect(box.getAttribute('aria-invalid')).toBe('true');
    }
    expect(asked).toHaveLength(1); // nothing was run

    box.value = '3';
    box.dispatchEvent(new Event('input'));
    node = painted(view);
    expect(status(node)).not.toContain('give a whole number');
    expect(box.hasAttribute('aria-invalid')).toBe(false);
  });
});

describe('a result that worked', () => {
  it('shows its first line and the cluster, the rest a click away', () => {
    const { view, asked } = viewWithHost();
    view.update(frame(noCluster));
    button(painted(view), 'start').click();
    const reason =
      'no usable GPU. Starting a CPU-only Dask cluster instead; %%to_gpu will leave data on the host.';
    view.actionFinished(asked[0][0], {
      ok: true,
      action: 'start',
      text: `Started a CPU cluster: 2 workers, scheduler ${ADDRESS}.\n${reason}`,
      cluster: running(2),
      time: T0
    });
    const box = painted(view).querySelector<HTMLElement>('.gpudask-action-status')!;
    const shown = [...box.querySelectorAll(':scope .gpudask-result > .gpudask-result-line')];
    expect(shown.map(n => n.textContent)).toEqual([
      `Started a CPU cluster: 2 workers, scheduler ${ADDRESS}.`,
      `Cluster: running (cpu), 2 workers, ${ADDRESS}`
    ]);
    const more = box.querySelector('details')!;
    expect(more.open).toBe(false);
    expect(more.querySelector('summary')?.textContent).toBe('What else it said (1 more line)');
    expect(more.textContent).toContain(reason);
  });

  it('shows every word of a failure', () => {
    const { view, asked } = viewWithHost();
    view.update(frame(noCluster));
    button(painted(view), 'start').click();
    view.actionFinished(asked[0][0], {
      ok: false,
      action: 'start',
      text: 'No GPU.\nNothing was started.',
      cluster: null,
      time: T0
    });
    const box = painted(view).querySelector<HTMLElement>('.gpudask-action-status')!;
    expect(box.querySelector('details')).toBeNull();
    expect(box.textContent).toBe('Start failed.No GPU.Nothing was started.');
  });
});
