/** Canvas drawing: GPU history lines and the task stream, both on one TimeAxis. */
import { TimeAxis, rectExtent } from './axis';
import { safeColor } from './dom';
import { TaskRect } from './frame';
import { laneKey } from './state';

export const UTIL_COLOR = '#3b82f6';
export const MEMORY_COLOR = '#f59e0b';
const GRID_COLOR = 'rgba(128, 128, 128, 0.35)';
const ERROR_FILL = '#000000';
const ERROR_OUTLINE = '#e53935';

/**
 * Size the canvas for `width` x `height` CSS pixels at the device pixel ratio and clear it.
 * Null where there is no 2D context (jsdom without a canvas package): callers still count.
 */
export function fitCanvas(
  canvas: HTMLCanvasElement,
  width: number,
  height: number
): CanvasRenderingContext2D | null {
  const ratio = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(width * ratio));
  const h = Math.max(1, Math.round(height * ratio));
  if (canvas.width !== w) {
    canvas.width = w;
  }
  if (canvas.height !== h) {
    canvas.height = h;
  }
  canvas.style.height = `${height}px`;
  let ctx: CanvasRenderingContext2D | null;
  try {
    ctx = canvas.getContext('2d');
  } catch {
    ctx = null; // jsdom without the canvas package
  }
  if (ctx) {
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
  }
  return ctx;
}

/** A line of values in 0..1 (null: a gap) over time, 0 at the bottom. */
export function drawSeries(
  ctx: CanvasRenderingContext2D,
  axis: TimeAxis,
  height: number,
  points: [number, number | null][],
  color: string
): void {
  ctx.strokeStyle = color;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  let drawing = false;
  for (const [t, value] of points) {
    if (value === null) {
      drawing = false;
      continue;
    }
    const x = axis.x(t);
    const y = height - 1 - value * (height - 2);
    if (drawing) {
      ctx.lineTo(x, y);
    } else {
      ctx.moveTo(x, y);
      drawing = true;
    }
  }
  ctx.stroke();
}

/** Dotted lines at 50 % and 100 %. */
export function drawGrid(ctx: CanvasRenderingContext2D, width: number, height: number): void {
  ctx.strokeStyle = GRID_COLOR;
  ctx.lineWidth = 1;
  ctx.setLineDash([2, 3]);
  ctx.beginPath();
  for (const y of [0.5, height / 2]) {
    ctx.moveTo(0, y);
    ctx.lineTo(width, y);
  }
  ctx.stroke();
  ctx.setLineDash([]);
}

/**
 * One rectangle per task in its lane; errored tasks black with a red outline. Returns how many
 * rectangles were drawn (or would be, without a context): what data-task-rects reports.
 */
export function drawTasks(
  ctx: CanvasRenderingContext2D | null,
  axis: TimeAxis,
  rects: TaskRect[],
  lanes: Map<string, number>,
  rowHeight: number
): number {
  let drawn = 0;
  const gap = rowHeight > 6 ? 1 : 0;
  for (const rect of rects) {
    const lane = lanes.get(laneKey(rect.worker, rect.thread));
    if (lane === undefined) {
      continue;
    }
    drawn += 1;
    if (!ctx) {
      continue;
    }
    const [x, w] = rectExtent(rect, axis);
    const y = lane * rowHeight + gap;
    const h = rowHeight - 2 * gap;
    ctx.fillStyle = rect.error ? ERROR_FILL : safeColor(rect.color);
    ctx.fillRect(x, y, w, h);
    if (rect.error) {
      ctx.strokeStyle = ERROR_OUTLINE;
      ctx.lineWidth = 1;
      ctx.strokeRect(x + 0.5, y + 0.5, Math.max(0, w - 1), Math.max(0, h - 1));
    }
  }
  return drawn;
}
