/**
 * Liveness: whether the kernel behind a view still answers. Two sources, used by both hosts:
 * the kernel's own status where the host can see it (restarting, dead, disconnected), and the
 * frames themselves: a live kernel sends one every interval, so none for max(2 s, 3 intervals)
 * means it is stuck, restarting or gone (`FrameWatchdog`).
 */
import { formatClock } from './format';

export type Liveness =
  | { kind: 'live' }
  /** No frame for `seconds`: maybe busy in C code, maybe gone; frames may come back. */
  | { kind: 'stale'; seconds: number }
  /** The kernel restarted, died or closed the view's channel: no frame will come. */
  | { kind: 'gone'; text: string; at: number };

export const LIVE: Liveness = { kind: 'live' };

/** Seconds without a frame after which a view says so. */
export function staleAfter(interval: number): number {
  return Math.max(2, 3 * (Number.isFinite(interval) && interval > 0 ? interval : 1));
}

/** Said once a kernel that was restarting answers again: the restart is over, the panel is not
 * (a widget's model does not survive its kernel). */
export function restartedText(at: number): string {
  return `The kernel restarted at ${formatClock(at)}: its cluster stopped with it.`;
}

/** What a kernel status (Kernel.Status or ConnectionStatus) means for the view; null: fine. */
export function kernelStatusText(status: string): string | null {
  switch (status) {
    case 'restarting':
    case 'autorestarting':
      return 'The kernel is restarting: its cluster stopped with it.';
    case 'dead':
      return 'The kernel died: its cluster stopped with it.';
    case 'terminating':
      return 'The kernel is shutting down: its cluster stops with it.';
    case 'disconnected':
      return 'Lost the connection to the kernel.';
    default:
      return null;
  }
}

export interface WatchdogOptions {
  onChange: (liveness: Liveness) => void;
  /** Seconds since the epoch (tests inject a clock). */
  now?: () => number;
}

/**
 * Calls onChange({kind: "stale"}) when no frame came for staleAfter(interval), then once a
 * second while it lasts, and onChange(LIVE) at the next frame. Off while paused or disposed.
 */
export class FrameWatchdog {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last = 0;
  private interval = 1;
  private stale = false;
  private running = false;
  private readonly now: () => number;

  constructor(private readonly options: WatchdogOptions) {
    this.now = options.now ?? (() => Date.now() / 1000);
  }

  /** Start expecting frames every `interval` seconds (from now). */
  start(interval: number): void {
    this.interval = interval;
    this.last = this.now();
    this.running = true;
    this.arm(staleAfter(interval));
  }

  /** A frame came. */
  frame(interval: number): void {
    this.interval = interval;
    this.last = this.now();
    if (this.stale) {
      this.stale = false;
      this.options.onChange(LIVE);
    }
    if (this.running) {
      this.arm(staleAfter(interval));
    }
  }

  /** Stop expecting frames (paused, gone, disposed). */
  stop(): void {
    this.running = false;
    this.stale = false;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private arm(seconds: number): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => this.check(), Math.max(0, seconds * 1000));
  }

  private check(): void {
    this.timer = null;
    if (!this.running) {
      return;
    }
    const quiet = this.now() - this.last;
    const limit = staleAfter(this.interval);
    if (quiet >= limit - 1e-3) {
      this.stale = true;
      this.options.onChange({ kind: 'stale', seconds: Math.floor(quiet) });
      this.arm(1);
    } else {
      this.arm(limit - quiet);
    }
  }
}

/** The status line for a liveness, or null when live. */
export function livenessText(liveness: Liveness): string | null {
  switch (liveness.kind) {
    case 'stale':
      return (
        `No update for ${liveness.seconds} s: the kernel is not responding ` +
        '(busy outside Python, restarting, or gone).'
      );
    case 'gone':
      return liveness.text;
    default:
      return null;
  }
}
