import { LabIcon } from '@jupyterlab/ui-components';

/** A graphics card with a fan; jp-icon3 follows the theme's icon colour. */
const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" fill-rule="evenodd"
    d="M2 4h2v1h16a2 2 0 0 1 2 2v9a2 2 0 0 1-2 2h-4v2h-2v-2H9v2H7v-2H4v3H2zm2 3v9h16V7zm5 1.5a3 3 0 1 1 0 6 3 3 0 0 1 0-6zm6 0h3v6h-3z"/>
</svg>`;

export const gpuIcon = new LabIcon({ name: 'gpudask-jupyter:gpu', svgstr: SVG });
