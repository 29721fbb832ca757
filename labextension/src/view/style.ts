/**
 * The view's CSS, as a string injected once per document: one source for both hosts, and the
 * widget bundle stays a single file. Colours come from JupyterLab's --jp-* variables, with
 * fallbacks that read on light and dark backgrounds (VS Code, Notebook 7, plain HTML).
 */

const STYLE_ID = 'gpudask-view-style';

export const CSS = `
.gpudask-view {
  --gpudask-gutter: min(11rem, 35%);
  --gpudask-fg: var(--jp-ui-font-color1, currentColor);
  --gpudask-muted: var(--jp-ui-font-color2, rgba(128, 128, 128, 1));
  --gpudask-border: var(--jp-border-color2, rgba(128, 128, 128, 0.35));
  --gpudask-track: var(--jp-layout-color3, rgba(128, 128, 128, 0.25));
  --gpudask-util: #3b82f6;
  --gpudask-memory: #f59e0b;
  --gpudask-done: var(--jp-success-color1, #43a047);
  --gpudask-error: var(--jp-error-color1, #e53935);
  --gpudask-warn: var(--jp-warn-color1, #f57c00);
  display: flex;
  flex-direction: column;
  gap: 6px;
  box-sizing: border-box;
  min-width: 0;
  padding: 6px;
  color: var(--gpudask-fg);
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  line-height: 1.3;
}
.gpudask-view *, .gpudask-view *::before, .gpudask-view *::after { box-sizing: border-box; }
.gpudask-view [hidden] { display: none !important; }
.gpudask-row {
  display: grid;
  grid-template-columns: var(--gpudask-gutter) minmax(0, 1fr);
  column-gap: 8px;
  align-items: start;
}
.gpudask-gutter { min-width: 0; overflow: hidden; }
.gpudask-plot { min-width: 0; }
.gpudask-ruler { height: 0; }
.gpudask-plot canvas { display: block; width: 100%; }
.gpudask-muted { color: var(--gpudask-muted); }
.gpudask-message.gpudask-error, .gpudask-erred { color: var(--gpudask-error); }
.gpudask-message.gpudask-warn { color: var(--gpudask-warn); }
.gpudask-controls { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: center; }
.gpudask-controls input[type='number'] { width: 4.5em; }
.gpudask-controls input, .gpudask-controls select, .gpudask-controls button {
  font: inherit;
  color: var(--jp-ui-font-color1, inherit);
  background: var(--jp-layout-color1, transparent);
  border: 1px solid var(--gpudask-border);
  border-radius: 2px;
}
.gpudask-controls button { padding: 1px 8px; cursor: pointer; }
.gpudask-devices { display: flex; flex-direction: column; gap: 8px; }
.gpudask-device { border-top: 1px solid var(--gpudask-border); padding-top: 4px; }
.gpudask-device-title { font-weight: 600; }
.gpudask-device-name, .gpudask-device-sensors, .gpudask-lane, .gpudask-prefix {
  overflow: hidden;
  text-overflow: ellipsis;
  white-space: nowrap;
}
.gpudask-device-sensors { color: var(--gpudask-muted); font-size: 0.9em; }
.gpudask-bars { display: grid; grid-template-columns: 1fr 1fr; gap: 6px; margin-bottom: 2px; }
.gpudask-bar {
  position: relative;
  height: 1.35em;
  background: var(--gpudask-track);
  border-radius: 2px;
  overflow: hidden;
}
.gpudask-bar-fill { height: 100%; width: 0; background: var(--gpudask-util); opacity: 0.75; }
.gpudask-memory .gpudask-bar-fill { background: var(--gpudask-memory); }
.gpudask-done .gpudask-bar-fill { background: var(--gpudask-done); }
.gpudask-bar-text {
  position: absolute;
  inset: 0 4px;
  white-space: nowrap;
  overflow: hidden;
  text-overflow: ellipsis;
  font-size: 0.9em;
  line-height: 1.35em;
}
.gpudask-lane { font-size: 10px; color: var(--gpudask-muted); }
.gpudask-ticks { display: flex; justify-content: space-between; font-size: 0.85em; color: var(--gpudask-muted); }
.gpudask-legend { display: flex; flex-direction: column; gap: 2px; }
.gpudask-prefixes { display: flex; flex-wrap: wrap; gap: 2px 10px; }
.gpudask-legend-item { display: inline-flex; align-items: center; gap: 4px; }
.gpudask-swatch { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px; }
.gpudask-recent { overflow-wrap: anywhere; }
.gpudask-key { font-family: var(--jp-code-font-family, monospace); margin-right: 8px; }
.gpudask-progress { display: flex; flex-direction: column; gap: 2px; }
.gpudask-progress-row {
  display: grid;
  grid-template-columns: var(--gpudask-gutter) minmax(4em, 1fr) auto;
  column-gap: 8px;
  align-items: center;
}
.gpudask-counts { display: inline-flex; gap: 8px; font-size: 0.9em; }
.gpudask-workers { display: block; overflow-x: auto; border-collapse: collapse; font-size: 0.9em; }
.gpudask-workers th, .gpudask-workers td {
  text-align: left;
  padding: 1px 6px 1px 0;
  border-bottom: 1px solid var(--gpudask-border);
  white-space: nowrap;
}
.gpudask-panel {
  background: var(--jp-layout-color1, transparent);
  color: var(--jp-ui-font-color1, inherit);
  font-size: var(--jp-ui-font-size1, 13px);
}
.gpudask-actions { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; padding: 6px 6px 0; }
.gpudask-heading { font-weight: 600; margin-right: auto; text-transform: uppercase; font-size: 0.9em; }
.gpudask-actions button {
  font: inherit;
  padding: 2px 10px;
  cursor: pointer;
  color: var(--jp-ui-font-color1, inherit);
  background: var(--jp-layout-color2, transparent);
  border: 1px solid var(--jp-border-color1, rgba(128, 128, 128, 0.5));
  border-radius: 2px;
}
.gpudask-actions button:disabled { opacity: 0.5; cursor: default; }
.gpudask-outcome {
  padding: 4px 6px 0;
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  font-family: var(--jp-code-font-family, monospace);
  font-size: 0.9em;
}
.gpudask-outcome:empty { display: none; }
`;

/** Add the stylesheet to this document unless it is there already. */
export function injectStyle(doc: Document): void {
  if (doc.getElementById(STYLE_ID)) {
    return;
  }
  const style = doc.createElement('style');
  style.id = STYLE_ID;
  style.textContent = CSS;
  (doc.head ?? doc.documentElement).appendChild(style);
}
