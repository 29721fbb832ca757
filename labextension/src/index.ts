/**
 * JupyterLab 4 plugin: the "GPU Dask" sidebar, which follows the notebook in focus and shows
 * its kernel's cluster, and a command that opens the same view in the main area.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { serverFetcher } from './lab/api';
import { NotebookFocus } from './lab/focus';
import { gpuIcon } from './lab/icon';
import { GpuDaskPanel } from './lab/panel';

const OPEN_PANEL = 'gpudask-jupyter:open-panel';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'gpudask-jupyter:plugin',
  description: 'GPU utilisation, memory and the Dask task stream of the focused notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
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
          app.shell.add(main, 'main', { mode: 'split-right' });
        }
        app.shell.activateById(main.id);
      }
    });
    palette?.addItem({ command: OPEN_PANEL, category: 'GPU Dask' });

    const sidebar = new GpuDaskPanel({
      focus,
      fetchFrame,
      heading: 'GPU Dask',
      openPanel: () => void app.commands.execute(OPEN_PANEL)
    });
    sidebar.id = 'gpudask-sidebar';
    sidebar.title.icon = gpuIcon;
    sidebar.title.caption = 'GPU Dask';
    app.shell.add(sidebar, 'left', { rank: 600 });
    restorer?.add(sidebar, sidebar.id);
  }
};

export default plugin;
