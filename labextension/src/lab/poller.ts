/**
 * Polls the frame endpoint while running: one request at a time, the next one `interval`
 * seconds after the last answer, the cursor sent back each time. Failures are reported and
 * polling goes on (the server extension may come back). Answers to requests made before a
 * stop() or reset() are dropped, so a frame of the previous kernel is never applied.
 */
import { clampInterval } from '../view/frame';

export interface FrameResponse {
  frame: unknown;
  /** Opaque: sent back with the next request ("" asks for a snapshot). */
  cursor: string;
}

/** One request for the frame of `kernel` since `cursor` (lab/api.ts: the server's endpoint). */
export type FetchFrame = (
  kernel: string,
  cursor: string,
  interval: number
) => Promise<FrameResponse>;

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export interface PollerOptions {
  fetchFrame: FetchFrame;
  /** The kernel id to ask for, or "" (GPU data only). */
  kernel: () => string;
  /** Seconds between requests (clamped to 0.25–10). */
  interval: () => number;
  onFrame: (frame: unknown) => void;
  /** Why the last request failed; null when it succeeded. */
  onError: (message: string | null) => void;
}

export class FramePoller {
  private cursor = '';
  private generation = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running = false;

  constructor(private readonly options: PollerOptions) {}

  get isRunning(): boolean {
    return this.running;
  }

  start(): void {
    if (!this.running) {
      this.running = true;
      void this.tick(this.generation);
    }
  }

  stop(): void {
    this.running = false;
    this.generation += 1;
    this.clearTimer();
  }

  /** Forget the cursor (next answer: a snapshot) and ask now if running. */
  reset(): void {
    this.cursor = '';
    this.restart();
  }

  /** Ask now instead of at the next tick (e.g. a shorter interval was chosen). */
  restart(): void {
    this.generation += 1;
    this.clearTimer();
    if (this.running) {
      void this.tick(this.generation);
    }
  }

  private clearTimer(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private async tick(generation: number): Promise<void> {
    this.timer = null;
    const interval = clampInterval(this.options.interval());
    try {
      const answer = await this.options.fetchFrame(this.options.kernel(), this.cursor, interval);
      if (generation !== this.generation) {
        return;
      }
      this.cursor = answer.cursor;
      this.options.onFrame(answer.frame);
      this.options.onError(null);
    } catch (error) {
      if (generation !== this.generation) {
        return;
      }
      this.cursor = ''; // the server may have restarted: start again from a snapshot
      this.options.onError(errorText(error));
    }
    if (this.running && generation === this.generation) {
      this.timer = setTimeout(() => void this.tick(generation), interval * 1000);
    }
  }
}
