import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { generated } from '../scripts/uplot-css.mjs';

const here = fileURLToPath(new URL('..', import.meta.url));

describe("uPlot's stylesheet in the bundle", () => {
  it('is what scripts/uplot-css.mjs writes from the installed uPlot', () => {
    const css = readFileSync(`${here}node_modules/uplot/dist/uPlot.min.css`, 'utf8');
    const file = readFileSync(`${here}src/view/uplot-css.generated.ts`, 'utf8');
    expect(file, 'run: node scripts/uplot-css.mjs').toBe(
      (generated as (css: string) => string)(css)
    );
  });
});
