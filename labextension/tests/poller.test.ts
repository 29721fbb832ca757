import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FramePoller, type FrameResponse } from '../src/lab/poller';

interface Call {
  kernel: string;
  cursor: string;
  interval: number;
  answer: (response: FrameResponse) => void;
  fail: (error: Error) => void;
}

function setup(interval = 1) {
  const calls: Call[] = [];
  const frames: unknown[] = [];
  const errors: (string | null)[] = [];
  let kernel = 'k1';
  const poller = new FramePoller({
    fetchFrame: (k, cursor, seconds) =>
      new Promise<FrameResponse>((answer, fail) =>
        calls.push({ kernel: k, cursor, interval: seconds, answer, fail })
      ),
    kernel: () => kernel,
    interval: () => interval,
    onFrame: frame => frames.push(frame),
    onError: message => errors.push(message)
  });
  return {
    poller,
    calls,
    frames,
    errors,
    setKernel: (k: string) => {
      kernel = k;
    }
  };
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('FramePoller', () => {
  it('sends the cursor back and waits the interval between requests', async () => {
    const { poller, calls, frames } = setup(2);
    poller.start();
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ kernel: 'k1', cursor: '', interval: 2 });
    calls[0].answer({ frame: 'snapshot', cursor: 'c1' });
    await vi.advanceTimersByTimeAsync(1999);
    expect(calls).toHaveLength(1); // one request at a time, `interval` after the answer
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    expect(calls[1].cursor).toBe('c1');
    expect(frames).toEqual(['snapshot']);
    poller.stop();
  });

  it('clamps the interval it asks for', async () => {
    const { poller, calls } = setup(0.01);
    poller.start();
    expect(calls[0].interval).toBe(0.25);
    poller.stop();
  });

  it('reports failures and keeps polling, from a snapshot', async () => {
    const { poller, calls, errors, frames } = setup();
    poller.start();
    calls[0].answer({ frame: 'f0', cursor: 'c1' });
    await vi.advanceTimersByTimeAsync(1000);
    calls[1].fail(new Error('The server answered 403 Forbidden'));
    await vi.advanceTimersByTimeAsync(1000);
    expect(errors).toEqual([null, 'The server answered 403 Forbidden']);
    expect(calls).toHaveLength(3);
    expect(calls[2].cursor).toBe('');
    calls[2].answer({ frame: 'f1', cursor: 'c2' });
    await vi.advanceTimersByTimeAsync(0);
    expect(errors.at(-1)).toBeNull();
    expect(frames).toEqual(['f0', 'f1']);
    poller.stop();
  });

  it('stops: no request after stop, and a late answer is dropped', async () => {
    const { poller, calls, frames } = setup();
    poller.start();
    poller.stop();
    calls[0].answer({ frame: 'late', cursor: 'c1' });
    await vi.advanceTimersByTimeAsync(5000);
    expect(frames).toEqual([]);
    expect(calls).toHaveLength(1);
    expect(poller.isRunning).toBe(false);
  });

  it('on reset asks again from a snapshot and drops the answer for the old kernel', async () => {
    const { poller, calls, frames, setKernel } = setup();
    poller.start();
    calls[0].answer({ frame: 'k1 snapshot', cursor: 'c1' });
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls[1]).toMatchObject({ kernel: 'k1', cursor: 'c1' });

    setKernel('k2');
    poller.reset();
    expect(calls[2]).toMatchObject({ kernel: 'k2', cursor: '' });
    calls[1].answer({ frame: 'k1 delta', cursor: 'c2' }); // late: for the old kernel
    calls[2].answer({ frame: 'k2 snapshot', cursor: 'd1' });
    await vi.advanceTimersByTimeAsync(1000);
    expect(frames).toEqual(['k1 snapshot', 'k2 snapshot']);
    expect(calls).toHaveLength(4); // one chain of requests, not two
    expect(calls[3]).toMatchObject({ kernel: 'k2', cursor: 'd1' });
    poller.stop();
  });
});
