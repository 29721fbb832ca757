/**
 * What every chart of the view shares, drawn with uPlot: the time axis (same width, same left
 * axis size, same x range: a task and the GPU load it caused line up), one cursor synced across
 * the charts of a view, drag to select a time range, double-click to follow the work again,
 * ctrl/⌘-wheel to zoom and shift-wheel to pan. Colours follow the theme (read from CSS).
 */
import uPlot from 'uplot';
import { formatClock } from './format';
import { ChartEvents, TimeRange } from './timewindow';

/** From this content width (CSS px: a projector, a panel opened in a large tab) the view's
 * text and the charts' axes are drawn LARGE_SCALE times larger, to be read from the back of a
 * room. */
export const LARGE_WIDTH = 1200;
export const LARGE_SCALE = 1.35;

/** The sizes of every chart's text and axes: the left axis is as wide in every chart of a view,
 * so the plots start at the same x. */
export interface ChartMetrics {
  font: string;
  /** Font size, CSS px. */
  fontSize: number;
  /** Width of the left axis. */
  axis: number;
  /** Height of the time axis. */
  xAxis: number;
}

export function chartMetrics(large: boolean): ChartMetrics {
  const scale = large ? LARGE_SCALE : 1;
  const fontSize = Math.round(12 * scale);
  return {
    font: `${fontSize}px system-ui, sans-serif`,
    fontSize,
    axis: Math.round(72 * scale),
    xAxis: Math.round(24 * scale)
  };
}
/** [top, right, bottom, left] of every chart. */
export const PADDING_TOP = 6;
export const PADDING: uPlot.Padding = [PADDING_TOP, 28, 0, 0];

export interface Theme {
  fg: string;
  grid: string;
}

/** The view's colours as CSS resolved them (one call per paint). */
export function readTheme(node: Element): Theme {
  const style = getComputedStyle(node);
  const fg = style.color || '#333';
  const grid = style.getPropertyValue('--gpudask-grid').trim() || 'rgba(128, 128, 128, 0.3)';
  return { fg, grid };
}

/** Tick steps of the time axis, seconds: whole seconds, so no two ticks read the same. */
export const TIME_INCREMENTS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];

/** Tick labels for times: seconds shown when ticks are less than a minute apart. */
export function timeTicks(splits: number[], increment: number): string[] {
  return splits.map(t => {
    const text = formatClock(t);
    return increment < 60 ? text : text.slice(0, 5);
  });
}

export interface ChartParts {
  /** The x range shown: the range functions read it on every redraw. */
  range: () => TimeRange;
  /** Whether the view is large (LARGE_WIDTH): a chart made in the other size is made again. */
  large: () => boolean;
  theme: () => Theme;
  syncKey: string;
  events: ChartEvents;
  signal: AbortSignal;
}

/** The x scale, the x axis and the cursor of every chart. */
export function baseOptions(
  parts: ChartParts,
  width: number,
  height: number
): Pick<uPlot.Options, 'width' | 'height' | 'padding' | 'scales' | 'cursor' | 'legend'> & {
  xAxis: uPlot.Axis;
} {
  const { range, theme, events } = parts;
  const metrics = chartMetrics(parts.large());
  return {
    width,
    height,
    padding: PADDING,
    legend: { show: false },
    scales: {
      x: { time: true, range: () => [range().start, range().end] }
    },
    cursor: {
      sync: { key: parts.syncKey, setSeries: false },
      drag: { x: true, y: false, setScale: false },
      points: { size: 5 },
      bind: {
        dblclick: () => () => {
          events.follow();
          return null;
        }
      }
    },
    xAxis: {
      scale: 'x',
      size: metrics.xAxis,
      font: metrics.font,
      stroke: () => theme().fg,
      grid: { stroke: () => theme().grid, width: 1 },
      ticks: { stroke: () => theme().grid, width: 1, size: 4 },
      space: 64 * (parts.large() ? LARGE_SCALE : 1),
      incrs: TIME_INCREMENTS,
      values: (_u, splits, _axis, _space, increment) => timeTicks(splits, increment)
    }
  };
}

/** A y axis in the shared size and font. */
export function yAxis(parts: ChartParts, extra: uPlot.Axis): uPlot.Axis {
  const { theme } = parts;
  const metrics = chartMetrics(parts.large());
  return {
    size: metrics.axis,
    font: metrics.font,
    gap: 4,
    stroke: () => theme().fg,
    grid: { stroke: () => theme().grid, width: 1 },
    ticks: { stroke: () => theme().grid, width: 1, size: 3 },
    ...extra
  };
}

/** A drag over a chart selects its time range. */
export function selectHook(parts: ChartParts): (self: uPlot) => void {
  return self => {
    const { left, width } = self.select;
    if (width > 4) {
      const start = self.posToVal(left, 'x');
      const end = self.posToVal(left + width, 'x');
      self.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
      parts.events.select({ start, end });
    }
  };
}

/**
 * After each draw, the plot area's left edge and width (CSS px) as data attributes of the chart:
 * tests check that every chart of a view has the same, i.e. one time axis.
 */
export function boxHook(self: uPlot): void {
  const ratio = uPlot.pxRatio || 1;
  self.root.dataset.plotLeft = String(Math.round(self.bbox.left / ratio));
  self.root.dataset.plotWidth = String(Math.round(self.bbox.width / ratio));
}

/**
 * What every chart does with the pointer beyond uPlot's own cursor and drag:
 *
 * - the wheel: ctrl/⌘ zooms around the pointer, shift pans; a plain wheel scrolls the page;
 * - the plot's place on the page is measured again before each move. uPlot measures it when the
 *   pointer enters and on scroll or resize only; text above a chart that grows or wraps (a
 *   message, the window's description) moves the chart under a still pointer, and the cursor,
 *   the tooltip and the task it names would then be read for the place the chart left.
 */
export function attachPointer(u: uPlot, parts: ChartParts): void {
  u.over.addEventListener(
    'wheel',
    event => {
      if (event.ctrlKey || event.metaKey) {
        event.preventDefault();
        const at = u.posToVal(event.offsetX, 'x');
        parts.events.zoom(at, event.deltaY > 0 ? 1.25 : 0.8);
      } else if (event.shiftKey) {
        event.preventDefault();
        const delta = event.deltaX || event.deltaY;
        parts.events.pan(delta > 0 ? 0.1 : -0.1);
      }
    },
    { passive: false, signal: parts.signal }
  );
  u.root.addEventListener('mousemove', () => u.syncRect(), {
    capture: true, // before uPlot's own listener on the plot reads the place
    signal: parts.signal
  });
}

/** The chart's size in CSS px for a container `width` wide (never below 100). */
export function chartWidth(width: number): number {
  return Math.max(100, Math.floor(width));
}
