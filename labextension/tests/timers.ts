/** Fake timers for the views' tests. jsdom paints with its own interval, so timers, the clock
 * and animation frames are faked together, or none of them. */
import { vi } from 'vitest';

const ALL = [
  'setTimeout',
  'clearTimeout',
  'setInterval',
  'clearInterval',
  'Date',
  'requestAnimationFrame',
  'cancelAnimationFrame'
] as const;

export function fakeTimers(): void {
  vi.useFakeTimers({ toFake: [...ALL] });
}
