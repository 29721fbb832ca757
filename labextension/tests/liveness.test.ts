import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  FrameWatchdog,
  kernelStatusText,
  livenessText,
  staleAfter,
  type Liveness
} from '../src/view/liveness';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

function watchdog() {
  const seen: Liveness[] = [];
  const dog = new FrameWatchdog({
    onChange: l => seen.push(l),
    now: () => Date.now() / 1000
  });
  return { dog, seen };
}

describe('liveness', () => {
  it('waits max(2 s, 3 intervals) without a frame', () => {
    expect(staleAfter(0.25)).toBe(2);
    expect(staleAfter(1)).toBe(3);
    expect(staleAfter(Number.NaN)).toBe(3);
  });

  it('says "not responding" when frames stop, and "live" when they come back', () => {
    const { dog, seen } = watchdog();
    dog.start(0.25);
    for (let i = 0; i < 10; i++) {
      vi.advanceTimersByTime(250);
      dog.frame(0.25);
    }
    expect(seen).toEqual([]);
    vi.advanceTimersByTime(1990);
    expect(seen).toEqual([]);
    vi.advanceTimersByTime(20);
    expect(seen).toEqual([{ kind: 'stale', seconds: 2 }]);
    vi.advanceTimersByTime(1000);
    expect(seen.at(-1)).toEqual({ kind: 'stale', seconds: 3 });
    dog.frame(0.25);
    expect(seen.at(-1)).toEqual({ kind: 'live' });
  });

  it('is quiet while stopped (paused, gone)', () => {
    const { dog, seen } = watchdog();
    dog.start(1);
    dog.stop();
    vi.advanceTimersByTime(60_000);
    expect(seen).toEqual([]);
    dog.frame(1); // a late frame does not restart it
    vi.advanceTimersByTime(60_000);
    expect(seen).toEqual([]);
  });

  it('says what a kernel status means', () => {
    expect(kernelStatusText('restarting')).toContain('restarting');
    expect(kernelStatusText('autorestarting')).toContain('restarting');
    expect(kernelStatusText('dead')).toContain('died');
    expect(kernelStatusText('disconnected')).toContain('connection');
    expect(kernelStatusText('idle')).toBeNull();
    expect(kernelStatusText('busy')).toBeNull();
    expect(livenessText({ kind: 'live' })).toBeNull();
    expect(livenessText({ kind: 'stale', seconds: 4 })).toContain('No update for 4 s');
    expect(livenessText({ kind: 'gone', text: 'Gone.', at: 0 })).toBe('Gone.');
  });
});
