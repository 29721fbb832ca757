import { describe, expect, it } from 'vitest';
import { parseWorkers } from '../src/view/actionbar';
import { TIME_INCREMENTS, timeTicks } from '../src/view/charts';
import { clusterText, safeLink } from '../src/view/cluster';
import { windowText } from '../src/view/windowbar';
import { frame } from './fixtures';

describe('small pieces', () => {
  it('reads a number of workers, or nothing', () => {
    expect(parseWorkers('3')).toBe(3);
    expect(parseWorkers(' 0 ')).toBe(0);
    for (const bad of ['', '-1', '2.5', 'x', '1e9', '2000']) {
      expect(parseWorkers(bad), bad).toBeNull();
    }
  });

  it('labels time ticks with seconds only when they are seconds apart', () => {
    const t = new Date(2024, 0, 1, 14, 3, 7).getTime() / 1000;
    expect(timeTicks([t], 5)).toEqual(['14:03:07']);
    expect(timeTicks([t], 120)).toEqual(['14:03']);
    expect(TIME_INCREMENTS.every(Number.isInteger)).toBe(true); // no two ticks read the same
  });

  it('links only http(s) dashboards', () => {
    expect(safeLink('http://127.0.0.1:8787/status')).toBe('http://127.0.0.1:8787/status');
    expect(safeLink('https://host/proxy/8787/status')).toBe('https://host/proxy/8787/status');
    expect(safeLink('javascript:alert(1)')).toBeNull();
    expect(safeLink('/proxy/8787')).toBeNull();
    expect(safeLink(null)).toBeNull();
  });

  it('says what state the cluster is in', () => {
    const cluster = frame().cluster!;
    expect(clusterText(cluster, 2, null)).toEqual({
      text: 'Cluster running (gpu), 2 workers, at tcp://127.0.0.1:8786',
      level: 'ok'
    });
    expect(clusterText({ ...cluster, state: 'connecting' }, 0, null).level).toBe('warn');
    expect(
      clusterText({ ...cluster, state: 'closed', message: 'closed by user' }, 0, null).text
    ).toBe('The cluster at tcp://127.0.0.1:8786 is closed: closed by user');
    const stopped = clusterText({ ...cluster, state: 'stopped', stopped_at: 0 }, 2, null);
    expect(stopped.level).toBe('stopped');
    expect(stopped.text).toMatch(
      /^Cluster stopped at \d\d:\d\d:\d\d \(gpu, tcp:\/\/127\.0\.0\.1:8786\)/
    );
    expect(stopped.text).toMatch(/: what this view saw of its work is kept below, greyed\.$/);
    const empty = clusterText({ ...cluster, state: 'stopped', stopped_at: 0 }, 2, null, false);
    expect(empty.text).toMatch(/: no task ran on it within the history this view keeps\.$/);
    const detached = { ...cluster, state: 'stopped' as const, stopped_at: 0, mode: 'attached' };
    expect(clusterText(detached, 2, null).text).toMatch(
      /^Detached at \d\d:\d\d:\d\d from the cluster at tcp:\/\/127\.0\.0\.1:8786, which may still run/
    );
    const left = clusterText({ ...detached, mode: 'joined' }, 2, null).text;
    expect(left).toMatch(/^Left at .* \(this kernel's workers ended; the cluster may still run\)/);
    expect(left).not.toContain('stopped');
    expect(clusterText(null, 0, 'Press Start.')).toEqual({ text: 'Press Start.', level: 'none' });
  });

  it('says what the time window shows and how to change it', () => {
    const range = { start: 0, end: 10 };
    expect(windowText({ kind: 'follow' }, range)).toContain('Following the work');
    expect(windowText({ kind: 'follow' }, range)).toContain('(10 s)');
    expect(windowText({ kind: 'all' }, range)).toMatch(/^All history/);
    expect(windowText({ kind: 'fixed', ...range }, range)).toContain('Double-click');
  });
});
