// Write src/view/uplot-css.generated.ts from uPlot's own stylesheet, so that both bundles carry
// it as a string injected with the view's CSS (no CSS loader, no CDN). tests/uplot-css.test.ts
// fails when the file is not what this script would write (after an uPlot update: run it).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('..', import.meta.url));

export function generated(css) {
  return [
    '/**',
    " * uPlot's stylesheet (node_modules/uplot/dist/uPlot.min.css), written by",
    " * scripts/uplot-css.mjs: do not edit. style.ts injects it with the view's CSS.",
    ' */',
    `export const UPLOT_CSS = ${JSON.stringify(css.trim())};`,
    ''
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const css = readFileSync(`${here}node_modules/uplot/dist/uPlot.min.css`, 'utf8');
  writeFileSync(`${here}src/view/uplot-css.generated.ts`, generated(css));
}
