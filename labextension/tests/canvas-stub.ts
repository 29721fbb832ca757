/**
 * jsdom has no 2D canvas: this records what the view draws, per canvas, so that tests can check
 * positions (rectangles with their fill, line points with their stroke).
 */
export interface Recorded {
  rects: { x: number; y: number; w: number; h: number; fill: string }[];
  lines: { color: string; points: [number, number][] }[];
}

export const drawn = new Map<HTMLCanvasElement, Recorded>();

export function installCanvasStub(): void {
  HTMLCanvasElement.prototype.getContext = function (this: HTMLCanvasElement) {
    const record: Recorded = { rects: [], lines: [] };
    drawn.set(this, record);
    let points: [number, number][] = [];
    const ctx = {
      fillStyle: '',
      strokeStyle: '',
      lineWidth: 1,
      setTransform: () => undefined,
      clearRect: () => {
        record.rects = [];
        record.lines = [];
      },
      setLineDash: () => undefined,
      beginPath: () => {
        points = [];
      },
      moveTo: (x: number, y: number) => points.push([x, y]),
      lineTo: (x: number, y: number) => points.push([x, y]),
      stroke: () => record.lines.push({ color: String(ctx.strokeStyle), points }),
      fillRect: (x: number, y: number, w: number, h: number) =>
        record.rects.push({ x, y, w, h, fill: String(ctx.fillStyle) }),
      strokeRect: () => undefined
    };
    return ctx as unknown as CanvasRenderingContext2D;
  } as unknown as typeof HTMLCanvasElement.prototype.getContext;
}
