// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import {
  ENDED,
  ENDED_CLASS,
  MODEL_NOT_FOUND,
  OutputAreaLike,
  PanelOutputs,
  replaceError
} from '../src/lab/endedpanels';
import { PANEL_MIME } from '../src/view/protocol.generated';

const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';

/** An output as JupyterLab's OutputArea lays it out: a child holding a prompt and the node
 * the widget manager's renderer writes into. */
function output(): { child: Widget; renderer: HTMLElement } {
  const child = new Widget();
  child.addClass('jp-OutputArea-child');
  const prompt = document.createElement('div');
  prompt.className = 'jp-OutputArea-prompt';
  const renderer = document.createElement('div');
  renderer.className = 'jp-OutputArea-output';
  renderer.textContent = 'Loading widget...';
  child.node.append(prompt, renderer);
  return { child, renderer };
}

class FakeArea implements OutputAreaLike {
  readonly changedSignal = new Signal<this, void>(this);
  readonly disposedSignal = new Signal<this, void>(this);
  isDisposed = false;
  datas: Record<string, unknown>[] = [];
  widgets: Widget[] = [];

  get model() {
    return {
      length: this.datas.length,
      get: (index: number) => ({ data: this.datas[index] }),
      changed: this.changedSignal
    };
  }

  get disposed() {
    return this.disposedSignal;
  }

  add(data: Record<string, unknown>): HTMLElement {
    const { child, renderer } = output();
    this.datas.push(data);
    this.widgets.push(child);
    this.changedSignal.emit();
    return renderer;
  }

  clear(): void {
    this.datas = [];
    for (const child of this.widgets) {
      child.dispose();
    }
    this.widgets = [];
    this.changedSignal.emit();
  }

  dispose(): void {
    this.isDisposed = true;
    this.disposedSignal.emit();
  }
}

const PANEL = { [WIDGET_VIEW]: { model_id: 'abc' }, [PANEL_MIME]: {}, 'text/plain': 'GPU Dask' };
const OTHER_WIDGET = { [WIDGET_VIEW]: { model_id: 'def' }, 'text/plain': 'IntSlider' };

/** Let the MutationObservers run. */
const observed = () => new Promise(resolve => setTimeout(resolve, 0));

describe('replaceError', () => {
  it("replaces the widget manager's text and nothing else", () => {
    const node = document.createElement('div');
    node.textContent = 'Loading widget...';
    expect(replaceError(node)).toBe(false);
    expect(node.textContent).toBe('Loading widget...');
    node.textContent = MODEL_NOT_FOUND;
    expect(replaceError(node)).toBe(true);
    expect(node.textContent).toBe(ENDED);
    expect(node.classList.contains(ENDED_CLASS)).toBe(true);
  });
});

describe('PanelOutputs', () => {
  it("says the panel's session ended where the widget manager finds no model", async () => {
    const area = new FakeArea();
    const watch = new PanelOutputs(area);
    const panel = area.add(PANEL);
    const other = area.add(OTHER_WIDGET);
    expect(watch.watched).toBe(1);
    panel.textContent = MODEL_NOT_FOUND;
    other.textContent = MODEL_NOT_FOUND;
    await observed();
    expect(panel.textContent).toBe(ENDED);
    expect(other.textContent).toBe(MODEL_NOT_FOUND); // another widget's output: not ours to say
  });

  it('leaves a panel that renders alone, and says it again after a second render', async () => {
    const area = new FakeArea();
    const panel = area.add(PANEL);
    new PanelOutputs(area);
    panel.textContent = '';
    const view = document.createElement('div');
    view.className = 'gpudask-view';
    view.textContent = 'Cluster running (cpu), 2 workers';
    panel.append(view);
    await observed();
    expect(panel.querySelector('.gpudask-view')?.textContent).toBe(
      'Cluster running (cpu), 2 workers'
    );
    // the manager renders again (its models restored after a kernel restart): still no model
    panel.textContent = 'Loading widget...';
    await observed();
    panel.textContent = MODEL_NOT_FOUND;
    await observed();
    expect(panel.textContent).toBe(ENDED);
  });

  it('replaces an error written before the output was watched', () => {
    const area = new FakeArea();
    const panel = area.add(PANEL);
    panel.textContent = MODEL_NOT_FOUND;
    new PanelOutputs(area);
    expect(panel.textContent).toBe(ENDED);
  });

  it('stops watching outputs that went away, and everything with its area', async () => {
    const area = new FakeArea();
    const watch = new PanelOutputs(area);
    const old = area.add(PANEL);
    area.clear(); // the cell runs again
    expect(watch.watched).toBe(0);
    old.textContent = MODEL_NOT_FOUND;
    await observed();
    expect(old.textContent).toBe(MODEL_NOT_FOUND);

    const again = area.add(PANEL);
    expect(watch.watched).toBe(1);
    area.dispose(); // the cell is deleted
    expect(watch.watched).toBe(0);
    again.textContent = MODEL_NOT_FOUND;
    await observed();
    expect(again.textContent).toBe(MODEL_NOT_FOUND);
    area.add(PANEL); // signals of a disposed area reach nothing
    expect(watch.watched).toBe(0);
  });
});
