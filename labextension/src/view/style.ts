/**
 * The view's CSS (and uPlot's), as a string injected once per document: one source for both
 * hosts, and the widget bundle stays a single file. Colours come from JupyterLab's --jp-*
 * variables with fallbacks for hosts without them (Voila without a theme, VS Code, plain HTML).
 *
 * Contrast (WCAG AA): text keeps the theme's foreground colours; states (warning, error,
 * stopped) are marked by coloured borders, bars and badges beside the text, never by coloured
 * text; buttons use JupyterLab's accept/warn colours, which carry white text at 4.5:1 or more.
 */
import { LARGE_SCALE } from './charts';
import { UPLOT_CSS } from './uplot-css.generated';

const STYLE_ID = 'gpudask-view-style';

export const CSS = `
.gpudask-view {
  --gpudask-fg: var(--jp-ui-font-color1, currentColor);
  --gpudask-muted: var(--jp-ui-font-color2, currentColor);
  --gpudask-bg: var(--jp-layout-color1, Canvas);
  --gpudask-popup: var(--jp-layout-color0, Canvas);
  --gpudask-border: var(--jp-border-color2, rgba(128, 128, 128, 0.4));
  --gpudask-track: var(--jp-layout-color3, rgba(128, 128, 128, 0.3));
  --gpudask-grid: rgba(128, 128, 128, 0.3);
  --gpudask-accent: var(--jp-brand-color1, #1976d2);
  --gpudask-ok: var(--jp-success-color1, #388e3c);
  --gpudask-warn: var(--jp-warn-color1, #f57c00);
  --gpudask-error: var(--jp-error-color1, #d32f2f);
  --gpudask-done: var(--jp-success-color1, #43a047);
  display: flex;
  flex-direction: column;
  gap: 8px;
  box-sizing: border-box;
  min-width: 0;
  max-width: 100%;
  padding: 6px;
  color: var(--gpudask-fg);
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  line-height: 1.35;
  overflow-wrap: anywhere;
}
/* a panel on a projector: the text grows with the charts' (charts.ts) */
.gpudask-view.gpudask-large { font-size: calc(var(--jp-ui-font-size1, 13px) * ${LARGE_SCALE}); }
.gpudask-view *, .gpudask-view *::before, .gpudask-view *::after { box-sizing: border-box; }
.gpudask-view [hidden] { display: none !important; }
.gpudask-view section { min-width: 0; }
.gpudask-muted { color: var(--gpudask-muted); }
.gpudask-visually-hidden {
  position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap;
}
.gpudask-section-title, .gpudask-chart-title {
  margin: 0 0 2px;
  font-size: 0.92em;
  font-weight: 600;
}
.gpudask-view :focus-visible {
  outline: 2px solid var(--gpudask-accent);
  outline-offset: 2px;
}

/* header: the cluster, its actions, their outcome */
.gpudask-header { display: flex; flex-direction: column; gap: 6px; }
.gpudask-cluster {
  display: flex; flex-wrap: wrap; align-items: center; gap: 4px 10px;
  padding-left: 8px; border-left: 4px solid var(--gpudask-border);
}
.gpudask-cluster[data-level='ok'] { border-left-color: var(--gpudask-ok); }
.gpudask-cluster[data-level='warn'] { border-left-color: var(--gpudask-warn); }
.gpudask-cluster[data-level='error'] { border-left-color: var(--gpudask-error); }
.gpudask-cluster[data-level='stopped'] { border-left-style: dashed; }
.gpudask-cluster-text { min-width: 0; }
.gpudask-dashboard { color: var(--jp-content-link-color, inherit); text-decoration: underline; }
.gpudask-toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 24px; }
.gpudask-actionbar, .gpudask-controls, .gpudask-windowbar {
  display: flex; flex-wrap: wrap; align-items: center; gap: 6px 8px;
}
.gpudask-scale { display: inline-flex; align-items: center; gap: 4px; }
.gpudask-controls label { display: inline-flex; align-items: center; gap: 4px; }
.gpudask-view .gpudask-button {
  margin: 0;
  height: auto;
  min-height: 26px;
  line-height: 1.2;
  padding: 3px 10px;
  font: inherit;
  letter-spacing: normal;
  border-radius: var(--jp-border-radius, 2px);
  color: var(--jp-ui-font-color1, inherit);
  background: var(--jp-layout-color2, rgba(128, 128, 128, 0.15));
  border: 1px solid var(--jp-border-color1, rgba(128, 128, 128, 0.6));
  cursor: pointer;
}
.gpudask-view .gpudask-button.jp-mod-accept {
  color: #fff; border-color: transparent;
  background: var(--jp-accept-color-normal, #1976d2);
}
.gpudask-view .gpudask-button.jp-mod-warn {
  color: #fff; border-color: transparent;
  background: var(--jp-warn-color-normal, #d32f2f);
}
.gpudask-view .gpudask-button:disabled { opacity: 0.45; cursor: not-allowed; }
.gpudask-view .gpudask-button[aria-pressed='true'] {
  border-color: var(--gpudask-accent);
  box-shadow: inset 0 -3px 0 var(--gpudask-accent);
}
.gpudask-view input:not([type='checkbox']), .gpudask-view select {
  font: inherit;
  color: var(--jp-ui-font-color1, inherit);
  background: var(--jp-layout-color1, transparent);
  border: 1px solid var(--jp-border-color1, rgba(128, 128, 128, 0.6));
  border-radius: 2px;
  min-height: 24px;
}
.gpudask-view input[type='number'] { width: 4.5em; }
.gpudask-view input[aria-invalid='true'] { border-color: var(--gpudask-error); }
.gpudask-action-status:empty { display: none; }
.gpudask-progress-text, .gpudask-result {
  padding: 3px 8px; border-left: 4px solid var(--gpudask-accent); white-space: pre-wrap;
}
.gpudask-result.gpudask-failed { border-left-color: var(--gpudask-error); }
.gpudask-result-title { font-weight: 600; }

/* status lines: the level is the mark, the text keeps its contrast */
.gpudask-messages { display: flex; flex-direction: column; gap: 3px; }
.gpudask-messages:empty { display: none; }
.gpudask-message { padding-left: 8px; border-left: 4px solid var(--gpudask-accent); }
.gpudask-message.gpudask-warn { border-left-color: var(--gpudask-warn); }
.gpudask-message.gpudask-error { border-left-color: var(--gpudask-error); font-weight: 600; }

/* GPUs now: one line per GPU where there is room, a block per GPU in a sidebar */
.gpudask-devices { display: flex; flex-direction: column; gap: 4px; }
.gpudask-device {
  min-width: 0; border-top: 1px solid var(--gpudask-border); padding-top: 4px;
  display: grid; grid-template-columns: minmax(9em, 15em) minmax(0, 1fr) minmax(0, 1.6fr) minmax(9em, 15em);
  column-gap: 12px; align-items: end;
}
.gpudask-device .gpudask-bars { display: contents; }
.gpudask-device-head { align-self: center; }
.gpudask-compact .gpudask-device, .gpudask-narrow .gpudask-device { display: block; }
.gpudask-compact .gpudask-device .gpudask-bars, .gpudask-narrow .gpudask-device .gpudask-bars {
  display: grid;
}
.gpudask-device-head { display: flex; align-items: baseline; flex-wrap: wrap; gap: 0 6px; min-width: 0; }
.gpudask-device-title { font-weight: 600; white-space: nowrap; }
.gpudask-device-name, .gpudask-prefix, .gpudask-worker-name {
  min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
}
.gpudask-device-sensors { color: var(--gpudask-muted); font-size: 0.92em; }
.gpudask-bars { display: grid; grid-template-columns: minmax(0, 1fr); gap: 3px; margin: 3px 0; }
.gpudask-bar { min-width: 0; }
.gpudask-bar-text { display: block; font-size: 0.92em; }
.gpudask-bar-track {
  display: flex; height: 6px; border-radius: 3px; overflow: hidden; background: var(--gpudask-track);
}
.gpudask-bar-fill { height: 100%; width: 0; flex: none; background: var(--gpudask-accent); }
.gpudask-device .gpudask-bar-fill-0 { background: var(--gpudask-device-color, var(--gpudask-accent)); }
.gpudask-memory .gpudask-bar-fill-1 {
  background: repeating-linear-gradient(135deg, var(--gpudask-device-color, #888) 0 2px, transparent 2px 5px);
}
.gpudask-done .gpudask-bar-fill-0 { background: var(--gpudask-done); }
.gpudask-done .gpudask-bar-fill-1 { background: var(--gpudask-error); }
.gpudask-swatch {
  display: inline-block; flex: none; width: 0.8em; height: 0.8em; border-radius: 2px;
  margin-right: 4px; vertical-align: -0.05em;
}
.gpudask-swatch-error { outline: 2px solid #e53935; outline-offset: -2px; }

/* charts */
.gpudask-gpu-charts { display: flex; flex-direction: column; gap: 6px; }
.gpudask-chart-plot { position: relative; }
.gpudask-view .uplot { font-family: inherit; width: auto; }
.gpudask-view .u-select { background: rgba(128, 128, 128, 0.2); }
.gpudask-readout { font-size: 0.92em; min-height: 1.3em; font-variant-numeric: tabular-nums; }
.gpudask-chart-key { display: flex; flex-wrap: wrap; gap: 2px 12px; font-size: 0.92em; }
.gpudask-key-line {
  display: inline-block; flex: none; width: 1.4em; margin-right: 4px; border-top: 2px solid;
}
.gpudask-key-dashed { border-top-style: dashed; }
/* a stopped cluster's work is greyed; the GPUs are still measured, so they keep their colours */
.gpudask-stopped .gpudask-stream .uplot canvas,
.gpudask-stopped .gpudask-progress .gpudask-bar-track,
.gpudask-stopped .gpudask-workers .gpudask-bar-track { filter: grayscale(1); opacity: 0.6; }
/* and so are its figures: the workers are gone, the counts are what they were */
.gpudask-stopped .gpudask-progress, .gpudask-stopped .gpudask-workers,
.gpudask-stopped .gpudask-recent { color: var(--gpudask-muted); }
.gpudask-stream-empty { color: var(--gpudask-muted); padding: 6px 0; }
.gpudask-message-detail { display: inline; margin-left: 0.5em; }
.gpudask-message-detail[open] { display: block; margin: 2px 0 0; }
.gpudask-message-detail summary, .gpudask-result-more summary { cursor: pointer; display: inline; }
.gpudask-message-detail summary { text-decoration: underline; }
.gpudask-tooltip {
  position: absolute; z-index: 10; max-width: min(320px, 90%); padding: 4px 8px;
  pointer-events: none; font-size: 0.92em;
  color: var(--gpudask-fg); background: var(--gpudask-popup);
  border: 1px solid var(--jp-border-color1, rgba(128, 128, 128, 0.6)); border-radius: 3px;
  box-shadow: 0 1px 4px rgba(0, 0, 0, 0.3);
}
.gpudask-tooltip-title { font-weight: 600; }
.gpudask-legend { display: flex; flex-direction: column; gap: 2px; margin-top: 4px; font-size: 0.92em; }
.gpudask-legend-prefixes, .gpudask-legend-actions { display: flex; flex-wrap: wrap; gap: 2px 12px; }
.gpudask-legend-item { display: inline-flex; align-items: center; min-width: 0; }
/* its times change every second while following: digits of one width keep it from rewrapping */
.gpudask-window-text { font-size: 0.92em; font-variant-numeric: tabular-nums; }

/* progress, recent work */
.gpudask-progress, .gpudask-recent { display: flex; flex-direction: column; gap: 3px; }
.gpudask-progress-row, .gpudask-recent-row {
  display: grid; grid-template-columns: minmax(6em, 14em) minmax(0, 1fr); column-gap: 8px; align-items: center;
}
.gpudask-compact .gpudask-progress-row, .gpudask-compact .gpudask-recent-row { grid-template-columns: minmax(0, 1fr); }
.gpudask-prefix { display: flex; align-items: center; }
.gpudask-recent-facts { font-size: 0.92em; }

/* GPU time per prefix: name, a bar of the busy share, the share in words, the figures */
.gpudask-gputime { display: flex; flex-direction: column; gap: 3px; }
.gpudask-gputime-row {
  display: grid; grid-template-columns: minmax(6em, 14em) minmax(4em, 8em) 6.5em minmax(0, 1fr);
  column-gap: 8px; align-items: center;
}
.gpudask-compact .gpudask-gputime-row { grid-template-columns: minmax(0, 1fr) 6.5em; }
.gpudask-compact .gpudask-gputime-bar { grid-column: 1 / -1; grid-row: 2; }
.gpudask-compact .gpudask-gputime-facts { grid-column: 1 / -1; }
.gpudask-gputime-bar {
  height: 0.7em; border: 1px solid var(--gpudask-muted); border-radius: 2px; overflow: hidden;
}
.gpudask-gputime-fill { display: block; height: 100%; }
.gpudask-gputime-busy { font-variant-numeric: tabular-nums; white-space: nowrap; text-align: right; }
.gpudask-gputime-facts, .gpudask-gputime-source { font-size: 0.92em; }
.gpudask-stopped .gpudask-gputime { color: var(--gpudask-muted); }

/* workers */
.gpudask-worker-table { border-collapse: collapse; font-size: 0.92em; width: 100%; overflow-wrap: normal; }
.gpudask-worker-table th, .gpudask-worker-table td {
  text-align: left; padding: 2px 8px 2px 0; border-bottom: 1px solid var(--gpudask-border);
  vertical-align: top;
}
.gpudask-worker-table th { font-weight: 600; white-space: nowrap; }
.gpudask-worker-table .gpudask-bar { min-width: 7em; }
.gpudask-worker-card {
  display: flex; flex-direction: column; gap: 2px; padding: 4px 0;
  border-bottom: 1px solid var(--gpudask-border); min-width: 0;
}
.gpudask-badge {
  display: inline-block; padding: 0 4px; border: 1px solid var(--gpudask-warn); border-radius: 3px;
  font-size: 0.85em; font-weight: 600;
}
.gpudask-processes { font-size: 0.92em; }

/* the room: a block per GPU, side by side where there is room, one under another in a sidebar */
.gpudask-room-gpus {
  display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 18em), 1fr));
  gap: 6px 16px;
}
.gpudask-room-gpu { min-width: 0; border-top: 1px solid var(--gpudask-border); padding-top: 4px; }
.gpudask-room-gpu .gpudask-bar-fill-0 { background: var(--gpudask-device-color, var(--gpudask-accent)); }
.gpudask-room-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 6px; min-width: 0; }
.gpudask-room-title { font-weight: 600; white-space: nowrap; }
.gpudask-room-name, .gpudask-room-note { color: var(--gpudask-muted); font-size: 0.92em; }
.gpudask-room-holders {
  list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 2px;
}
.gpudask-room-holder, .gpudask-room-others { padding-left: 6px; border-left: 3px solid transparent; }
.gpudask-room-you { border-left-color: var(--gpudask-accent); }
.gpudask-room-who { font-weight: 600; }
.gpudask-room-holder .gpudask-badge { margin-left: 2px; }
.gpudask-room-note { margin-top: 4px; }

/* the JupyterLab panel around the view */
.gpudask-panel {
  background: var(--jp-layout-color1, transparent);
  color: var(--jp-ui-font-color1, inherit);
  font-size: var(--jp-ui-font-size1, 13px);
}
.gpudask-panel-bar { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; padding: 6px 6px 0; }
.gpudask-heading { font-weight: 600; margin: 0 auto 0 0; text-transform: uppercase; font-size: 0.92em; }
`;

/** Add the stylesheet to this document unless it is there already. */
export function injectStyle(doc: Document): void {
  if (doc.getElementById(STYLE_ID)) {
    return;
  }
  const style = doc.createElement('style');
  style.id = STYLE_ID;
  style.textContent = `${UPLOT_CSS}\n${CSS}`;
  (doc.head ?? doc.documentElement).appendChild(style);
}
