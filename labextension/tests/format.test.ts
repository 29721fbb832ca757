import { describe, expect, it } from 'vitest';
import { formatClock, formatClockPrecise, formatSeconds } from '../src/view/format';
import { axisBytes } from '../src/view/gpucharts';

describe('formats', () => {
  it('writes durations in their unit', () => {
    expect(formatSeconds(0.00085)).toBe('850 µs');
    expect(formatSeconds(0.0123)).toBe('12.3 ms');
    expect(formatSeconds(1.25)).toBe('1.25 s');
    expect(formatSeconds(125)).toBe('2 min 5 s');
    expect(formatSeconds(119.6)).toBe('2 min 0 s');
    expect(formatSeconds(3720)).toBe('1 h 2 min');
    expect(formatSeconds(-1)).toBe('–');
  });

  it('writes clock times in 24 h', () => {
    const t = new Date(2024, 0, 1, 14, 3, 7, 250).getTime() / 1000;
    expect(formatClock(t)).toBe('14:03:07');
    expect(formatClockPrecise(t)).toBe('14:03:07.250');
  });

  it('writes memory axis labels short', () => {
    expect(axisBytes(0)).toBe('0');
    expect(axisBytes(134 * 2 ** 30)).toBe('134 GiB');
    expect(axisBytes(66.9 * 2 ** 30)).toBe('67 GiB');
    expect(axisBytes(1.5 * 2 ** 30)).toBe('1.5 GiB');
    expect(axisBytes(512 * 2 ** 20)).toBe('512 MiB');
  });
});
