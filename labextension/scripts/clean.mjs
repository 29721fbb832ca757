// Remove the build outputs: lib/ here and the two bundles in the Python package.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('..', import.meta.url));
for (const path of [
  'lib',
  'tsconfig.tsbuildinfo',
  '../gpudask_jupyter/labextension',
  '../gpudask_jupyter/widget/static'
]) {
  rmSync(new URL(path, `file://${here}`), { recursive: true, force: true });
}
