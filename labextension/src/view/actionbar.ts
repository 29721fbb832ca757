/**
 * The cluster's buttons (Start, Stop, Restart, Scale with its number, Detach), in JupyterLab's
 * own button styles, and the line under them: the action under way with its elapsed seconds
 * (and a word when it waits behind a running cell), then its result as structured text.
 */
import { ACTIONS, ActionName, Offer, Phase, progressText, resultParts } from './actions';
import { el, setText } from './dom';

const LABEL: Record<ActionName, string> = {
  start: 'Start',
  stop: 'Stop',
  restart: 'Restart',
  scale: 'Scale',
  detach: 'Detach'
};
const KIND: Record<ActionName, string> = {
  start: 'jp-mod-accept',
  stop: 'jp-mod-warn',
  restart: '',
  scale: '',
  detach: 'jp-mod-warn'
};

/** The workers asked for in the scale box, or null when it is not a whole number 0–1024. */
export function parseWorkers(text: string): number | null {
  const n = Number(text.trim());
  return text.trim() !== '' && Number.isInteger(n) && n >= 0 && n <= 1024 ? n : null;
}

export class ActionBar {
  readonly node = el('div', 'gpudask-actionbar');
  readonly status = el('div', 'gpudask-action-status');
  private readonly buttons = new Map<ActionName, HTMLButtonElement>();
  private readonly scaleBox = el('span', 'gpudask-scale');
  private readonly workers = el('input', 'gpudask-scale-input');
  private statusKey = '';
  private shownWorkers: number | null = null;

  constructor(onAction: (action: ActionName, n: number | null) => void, signal: AbortSignal) {
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-label', 'Cluster actions');
    this.status.setAttribute('role', 'status');
    this.workers.type = 'number';
    this.workers.min = '0';
    this.workers.max = '1024';
    this.workers.step = '1';
    this.workers.setAttribute('aria-label', 'Number of workers');
    for (const action of ACTIONS) {
      const button = el(
        'button',
        `jp-Button jp-mod-styled gpudask-button gpudask-${action} ${KIND[action]}`.trim(),
        LABEL[action]
      );
      button.type = 'button';
      button.addEventListener(
        'click',
        () => {
          if (action === 'scale') {
            const n = parseWorkers(this.workers.value);
            if (n === null) {
              this.showInvalid();
              return;
            }
            onAction(action, n);
          } else {
            onAction(action, null);
          }
        },
        { signal }
      );
      this.buttons.set(action, button);
    }
    // a refusal stays until the number it refused changes (a frame must not bring back an
    // older result beside a box still marked invalid)
    this.workers.addEventListener('input', () => this.forgetRefusal(), { signal });
    this.workers.addEventListener(
      'keydown',
      event => {
        if (event.key === 'Enter') {
          this.buttons.get('scale')?.click();
        }
      },
      { signal }
    );
    this.scaleBox.append(this.workers, this.buttons.get('scale') as HTMLButtonElement);
    for (const action of ACTIONS) {
      this.node.append(
        action === 'scale' ? this.scaleBox : (this.buttons.get(action) as HTMLElement)
      );
    }
  }

  /** Show what is offered, and the phase at time `now`; `workers` fills an untouched scale box. */
  show(offers: Record<ActionName, Offer>, phase: Phase, now: number, workers: number | null): void {
    for (const action of ACTIONS) {
      const button = this.buttons.get(action) as HTMLButtonElement;
      const offer = offers[action];
      const target = action === 'scale' ? this.scaleBox : button;
      target.hidden = !offer.visible;
      button.disabled = !offer.enabled;
      button.title = offer.title;
    }
    this.workers.disabled = !offers.scale.enabled;
    // the cluster's size, when it changed, unless the user is typing another
    const typing = this.workers.ownerDocument.activeElement === this.workers;
    if (workers !== null && workers !== this.shownWorkers && !typing) {
      this.workers.value = String(workers);
      this.shownWorkers = workers;
      this.forgetRefusal(); // the number refused is no longer in the box
    }
    this.node.hidden = ACTIONS.every(a => !offers[a].visible);
    this.showPhase(phase, now);
  }

  private forgetRefusal(): void {
    if (this.statusKey === 'invalid') {
      this.workers.removeAttribute('aria-invalid');
      this.statusKey = '';
      delete this.status.dataset.phase;
      this.status.replaceChildren();
    }
  }

  private showInvalid(): void {
    this.workers.setAttribute('aria-invalid', 'true');
    this.statusKey = 'invalid';
    this.status.dataset.phase = 'refused';
    this.status.replaceChildren(
      el(
        'div',
        'gpudask-result gpudask-failed',
        'Scale: give a whole number of workers, 0 to 1024.'
      )
    );
  }

  private showPhase(phase: Phase, now: number): void {
    const progress = progressText(phase, now);
    if (progress !== null) {
      this.workers.removeAttribute('aria-invalid');
      this.status.dataset.phase = phase.kind;
      if (this.statusKey !== 'progress') {
        this.statusKey = 'progress';
        this.status.replaceChildren(el('div', 'gpudask-progress-text'));
      }
      setText(this.status.firstElementChild as HTMLElement, progress);
      return;
    }
    if (this.statusKey === 'invalid') {
      return; // until the box changes or another action starts
    }
    if (phase.kind === 'done') {
      const key = `done:${phase.id}`;
      if (this.statusKey !== key) {
        this.statusKey = key;
        this.status.dataset.phase = phase.result.ok ? 'done' : 'failed';
        const parts = resultParts(phase.action, phase.result);
        const box = el('div', phase.result.ok ? 'gpudask-result' : 'gpudask-result gpudask-failed');
        box.append(
          el('div', 'gpudask-result-title', parts.title),
          ...parts.said.map(line => el('div', 'gpudask-result-line', line))
        );
        if (parts.more.length > 0) {
          const more = el('details', 'gpudask-result-more');
          const lines = `${parts.more.length} more line${parts.more.length === 1 ? '' : 's'}`;
          more.append(
            el('summary', undefined, `What else it said (${lines})`),
            ...parts.more.map(line => el('div', 'gpudask-result-line', line))
          );
          box.append(more);
        }
        if (parts.cluster !== null) {
          box.append(el('div', 'gpudask-result-line', parts.cluster));
        }
        this.status.replaceChildren(box);
      }
      return;
    }
    if (phase.kind === 'idle' && this.statusKey !== '') {
      this.statusKey = '';
      delete this.status.dataset.phase;
      this.status.replaceChildren();
    }
  }
}
