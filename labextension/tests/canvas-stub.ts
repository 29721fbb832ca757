/**
 * jsdom has no 2D canvas, no Path2D and no matchMedia, which uPlot uses: this records what is
 * drawn per canvas (rectangles with their fill) and answers every other call with nothing, so
 * the view's charts run in tests as in a browser.
 */
export interface Recorded {
  rects: { x: number; y: number; w: number; h: number; fill: string }[];
}

export const drawn = new Map<HTMLCanvasElement, Recorded>();

class Path2DStub {
  moveTo(): void {}
  lineTo(): void {}
  rect(): void {}
  arc(): void {}
  closePath(): void {}
  bezierCurveTo(): void {}
  quadraticCurveTo(): void {}
  addPath(): void {}
}

export function installCanvasStub(): void {
  Object.assign(globalThis, { Path2D: Path2DStub });
  if (typeof (globalThis as { matchMedia?: unknown }).matchMedia !== 'function') {
    Object.assign(globalThis, {
      matchMedia: () => ({
        matches: false,
        addEventListener: () => undefined,
        removeEventListener: () => undefined,
        addListener: () => undefined,
        removeListener: () => undefined
      })
    });
  }
  HTMLCanvasElement.prototype.getContext = function (this: HTMLCanvasElement) {
    const record: Recorded = { rects: [] };
    drawn.set(this, record);
    const state: Record<string | symbol, unknown> = {
      fillStyle: '',
      strokeStyle: '',
      lineWidth: 1,
      font: '10px sans-serif',
      canvas: this,
      clearRect: () => {
        record.rects = [];
      },
      fillRect: (x: number, y: number, w: number, h: number) =>
        record.rects.push({ x, y, w, h, fill: String(state.fillStyle) }),
      measureText: (text: string) => ({ width: text.length * 6 })
    };
    return new Proxy(state, {
      get: (target, name) => (name in target ? target[name] : () => undefined),
      set: (target, name, value) => {
        target[name] = value;
        return true;
      }
    }) as unknown as CanvasRenderingContext2D;
  } as unknown as typeof HTMLCanvasElement.prototype.getContext;
}
