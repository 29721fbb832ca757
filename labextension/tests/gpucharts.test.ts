// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import {
  chartKey,
  gpuColor,
  gpuSeries,
  memoryCeiling,
  memoryTitle,
  readout
} from '../src/view/gpucharts';
import { applyFrame, emptyState } from '../src/view/state';
import { T0, device, frame, gpuSample } from './fixtures';

describe('GPU chart data', () => {
  const gib = 2 ** 30;
  const devices = [device('GPU-aaaa'), device('GPU-bbbb', { label: '1', cluster_memory: 3 * gib })];

  function state() {
    return applyFrame(
      emptyState(),
      frame({
        devices,
        samples: [
          gpuSample(T0 - 30, 10, gib),
          gpuSample(T0 - 20, 20, 2 * gib),
          gpuSample(T0 - 10, 30, 4 * gib),
          gpuSample(T0, 40, 5 * gib)
        ]
      })
    );
  }

  it('takes the samples in the window and one each side', () => {
    const series = gpuSeries(state(), devices, { start: T0 - 15, end: T0 - 5 });
    expect(series.xs).toEqual([T0 - 20, T0 - 10, T0]);
    expect(series.util[0]).toEqual([20, 30, 40]);
    expect(series.used[0]).toEqual([2 * gib, 4 * gib, 5 * gib]);
    expect(series.util[1]).toEqual([null, null, null]); // no samples of the second GPU
  });

  it("follows the cluster's memory as the frames report it", () => {
    const series = gpuSeries(state(), devices, { start: T0 - 40, end: T0 });
    expect(series.cluster[0].every(v => v === null)).toBe(true);
    expect(series.cluster[1]).toEqual([null, null, null, 3 * gib]); // reported at T0
  });

  it('tops the memory axis just above the use, so that a little use is readable', () => {
    const series = gpuSeries(state(), devices, { start: T0 - 40, end: T0 });
    expect(memoryCeiling(devices, series)).toBe(8 * gib); // 5 GiB used of 140: the axis ends at 8
    const little = { ...series, used: [[1.5 * gib]], cluster: [[null]] };
    expect(memoryCeiling(devices, little)).toBe(2 * gib);
    const full = { ...series, used: [[130 * gib]], cluster: [[null]] };
    expect(memoryCeiling(devices, full)).toBe(140 * gib); // never above what the GPU has
    const none = { ...series, used: [[null]], cluster: [[null]] };
    expect(memoryCeiling([device('x', { memory_total: null })], none)).toBe(128 * 2 ** 20);
  });

  it("states the GPUs' memory in the title and keys each GPU's line", () => {
    expect(memoryTitle(devices)).toBe('GPU memory of 140 GiB each (dashed: held by this cluster)');
    const mixed = [device('a'), device('b', { memory_total: 80 * gib })];
    expect(memoryTitle(mixed)).toBe('GPU memory of 80 GiB–140 GiB (dashed: held by this cluster)');
    const key = chartKey(devices);
    const items = [...key.querySelectorAll('.gpudask-legend-item')];
    expect(items.map(i => i.textContent)).toEqual([
      'GPU 0',
      'GPU 1',
      "this cluster's share (memory)"
    ]);
    const lines = [...key.querySelectorAll<HTMLElement>('.gpudask-key-line')];
    expect(lines[0].style.borderTopColor).not.toBe(lines[1].style.borderTopColor);
    expect(gpuColor(0)).not.toBe(gpuColor(1));
    expect(lines[2].classList.contains('gpudask-key-dashed')).toBe(true);
  });

  it('reads values at the pointer, or the latest', () => {
    const xs = [T0 - 1, T0];
    const text = readout(
      ['GPU 0', 'GPU 1'],
      [
        [10, 20],
        [null, 5]
      ],
      xs,
      null,
      v => `${v}`
    );
    expect(text).toBe('latest: GPU 0 20 · GPU 1 5');
    expect(readout(['GPU 0'], [[10, 20]], xs, 0, v => `${v}`)).toMatch(
      /^\d\d:\d\d:\d\d: GPU 0 10$/
    );
    expect(readout(['GPU 0'], [[]], [], null, v => `${v}`)).toBe('');
  });
});
