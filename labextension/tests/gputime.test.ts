// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { GpuTimeRow, OTHER_COLOR, PALETTE } from '../src/view/frame';
import { GPU_TIME_ROWS, GpuTimeSection, busyPercent, gpuTimeText } from '../src/view/gputime';
import { applyFrame, emptyState } from '../src/view/state';
import { frame } from './fixtures';

const MiB = 2 ** 20;

function row(overrides: Partial<GpuTimeRow> = {}): GpuTimeRow {
  return {
    prefix: 'spin',
    color: PALETTE[0],
    tasks: 4,
    wall: 4.0,
    gpu: 3.0,
    peak: 32 * MiB,
    htod: 128 * MiB,
    dtoh: 0,
    shared: false,
    ...overrides
  };
}

describe('GPU time by prefix', () => {
  it("says each prefix's busy share, its seconds, peak and bytes, in its stream colour", () => {
    const section = new GpuTimeSection();
    const rows = [
      row(),
      row({ prefix: 'idle', color: PALETTE[1], gpu: 0, peak: null, htod: 0, tasks: 1 })
    ];
    section.update({ rows, source: 'CUPTI (1 µs resolution): 1 worker(s)', measuring: 1 });
    const lines = [...section.node.querySelectorAll('.gpudask-gputime-row')];
    expect(lines).toHaveLength(2);
    expect(lines[0].querySelector('.gpudask-gputime-busy')?.textContent).toBe('75% busy');
    expect(lines[0].querySelector('.gpudask-gputime-facts')?.textContent).toBe(
      '3 s GPU of 4 s · peak 32 MiB · 128 MiB to GPU · 4 tasks'
    );
    const fill = lines[0].querySelector('.gpudask-gputime-fill') as HTMLElement;
    expect(fill.style.width).toBe('75%');
    expect(lines[1].querySelector('.gpudask-gputime-busy')?.textContent).toBe('0% busy');
    expect(section.node.textContent).toContain('CUPTI (1 µs resolution)');
    expect(section.node.hidden).toBe(false);
  });

  it('hides without a cluster, says so with no task ended, and counts what it leaves out', () => {
    const section = new GpuTimeSection();
    section.update(null);
    expect(section.node.hidden).toBe(true);
    section.update({ rows: [], source: 'GPU time is not measured: no GPU', measuring: 0 });
    expect(section.node.hidden).toBe(true); // a cluster without GPUs: nothing to say here
    section.update({
      rows: [],
      source: 'NVML samples (167 ms resolution): 1 worker(s)',
      measuring: 1
    });
    expect(section.node.hidden).toBe(false);
    expect(section.node.textContent).toContain('No task has ended in the window yet.');
    const many = Array.from({ length: GPU_TIME_ROWS + 2 }, (_, i) =>
      row({ prefix: `p${i}`, color: i < PALETTE.length ? PALETTE[i] : OTHER_COLOR })
    );
    section.update({ rows: many, source: '', measuring: 1 });
    expect(section.node.querySelectorAll('.gpudask-gputime-row')).toHaveLength(GPU_TIME_ROWS);
    expect(section.node.textContent).toContain('and 2 more prefixes');
  });

  it('reads shared threads and no wall time', () => {
    expect(gpuTimeText(row({ shared: true, tasks: 1, dtoh: MiB }))).toContain(
      '1 MiB back · 1 task, threads shared'
    );
    expect(busyPercent(row({ wall: 0 }))).toBeNull();
    expect(gpuTimeText(row({ gpu: 0, peak: 0, htod: 0, tasks: 2, wall: 1 }))).toBe(
      'no GPU time in 1 s · 2 tasks'
    );
    expect(busyPercent(row({ gpu: 5, wall: 4 }))).toBe(100);
  });

  it('comes from the frames and is kept with a stopped cluster', () => {
    const gpuTime = {
      rows: [row()],
      source: 'NVML samples (167 ms resolution): 1 worker(s)',
      measuring: 1
    };
    let state = applyFrame(emptyState(), frame({ gpu_time: gpuTime }));
    expect(state.gpu_time).toEqual(gpuTime);
    state = applyFrame(state, frame({ kind: 'delta', cluster: null, time: state.time! + 1 }));
    expect(state.gpu_time).toEqual(gpuTime);
  });
});
