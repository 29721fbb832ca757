/**
 * JupyterLab 4 / Notebook 7 plugin: the "GPU Dask" sidebar, which follows the notebook in focus
 * and shows its kernel's cluster, a command that opens the same view in a larger area, and a
 * sentence in place of the widget manager's error where a reopened notebook keeps a panel of a
 * kernel session that has ended.
 * The notebook tracker is optional: where there is none (Voila) the plugin adds nothing, and the
 * widget, which needs no plugin, still renders.
 */
import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { serverFetcher } from './lab/api';
import { watchEndedPanels } from './lab/endedpanels';
import { NotebookFocus } from './lab/focus';
import { gpuIcon } from './lab/icon';
import { openInShell } from './lab/open';
import { GpuDaskPanel } from './lab/panel';

const OPEN_PANEL = 'gpudask-jupyter:open-panel';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'gpudask-jupyter:plugin',
  description: 'GPU utilisation, memory and the Dask task stream of the focused notebook.',
  autoStart: true,
  optional: [INotebookTracker, ILabShell, ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker | null,
    labShell: ILabShell | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    if (!tracker) {
      return; // no notebooks to follow (Voila): nothing to add
    }
    watchEndedPanels(tracker);
    const focus = new NotebookFocus(tracker);
    const fetchFrame = serverFetcher(app.serviceManager.serverSettings);
    let main: MainAreaWidget<GpuDaskPanel> | null = null;

    app.commands.addCommand(OPEN_PANEL, {
      label: 'Open GPU Dask panel',
      icon: gpuIcon,
      execute: () => {
        if (!main || main.isDisposed) {
          main = new MainAreaWidget({ content: new GpuDaskPanel({ focus, fetchFrame }) });
          main.id = 'gpudask-main-panel';
          main.title.label = 'GPU Dask';
          main.title.icon = gpuIcon;
          main.title.closable = true;
        }
        const area = openInShell(app.shell, main, labShell !== null);
        if (area === null) {
          main.dispose();
          main = null;
        }
        return area;
      }
    });
    palette?.addItem({ command: OPEN_PANEL, category: 'GPU Dask' });

    const sidebar = new GpuDaskPanel({
      focus,
      fetchFrame,
      heading: 'GPU Dask',
      openPanel: async () => {
        const area = await app.commands.execute(OPEN_PANEL);
        return area !== null && area !== undefined;
      }
    });
    sidebar.id = 'gpudask-sidebar';
    sidebar.title.icon = gpuIcon;
    sidebar.title.caption = 'GPU Dask';
    app.shell.add(sidebar, 'left', { rank: 600 });
    restorer?.add(sidebar, sidebar.id);
  }
};

export default plugin;
