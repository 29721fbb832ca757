/**
 * The status lines: why there is nothing (or less) to draw, in words. The kernel's liveness and
 * host messages first (no notebook in focus, a failed request), then refused frames, NVML, tasks
 * waiting for a resource no worker has, and the monitor's messages. The level is shown by a
 * coloured mark beside the text; the text keeps the theme's foreground colour (contrast).
 */
import { el } from './dom';
import { formatClock } from './format';
import { Liveness, livenessText } from './liveness';
import { ViewState } from './state';

export type Level = 'error' | 'warn' | 'info';

export interface StatusLine {
  level: Level;
  text: string;
  /** Why, shown on a click (a <details> after the text). */
  detail?: string;
}

/** What a view says without GPU data: one short line, the reason a click away (it was a
 * sentence of up to five lines on a laptop's 250 px sidebar, on screen all workshop long). */
export const NO_GPU_DATA = 'No GPU data here: the task stream only.';

export interface StatusContext {
  /** From the host: e.g. "No notebook in focus.", "Cannot reach the server: …". */
  host: string[];
  paused: boolean;
  liveness: Liveness;
}

export function statusLines(state: ViewState, context: StatusContext): StatusLine[] {
  const lines: StatusLine[] = [];
  const live = livenessText(context.liveness);
  if (live) {
    lines.push({ level: context.liveness.kind === 'gone' ? 'error' : 'warn', text: live });
  }
  lines.push(...context.host.map(text => ({ level: 'warn' as const, text })));
  lines.push(...state.errors.map(text => ({ level: 'error' as const, text })));
  if (state.frames === 0) {
    if (lines.length === 0) {
      lines.push({ level: 'info', text: 'Waiting for the first frame…' });
    }
    return lines;
  }
  if (context.paused && state.time !== null) {
    lines.push({ level: 'info', text: `Paused: showing ${formatClock(state.time)}.` });
  }
  if (state.nvml && !state.nvml.available) {
    const reason = state.nvml.reason || 'NVML is not available';
    lines.push({ level: 'warn', text: NO_GPU_DATA, detail: reason });
  }
  for (const wait of state.waiting) {
    const tasks = `${wait.tasks} task${wait.tasks === 1 ? '' : 's'}`;
    lines.push({
      level: 'warn',
      text: `${tasks} wait for the resource "${wait.resource}", which no worker offers: they will not run.`
    });
  }
  lines.push(...state.messages.map(text => ({ level: 'info' as const, text })));
  return lines;
}

const LEVEL_WORD: Record<Level, string> = { error: 'Error', warn: 'Warning', info: 'Note' };

export class MessagesSection {
  readonly node = el('div', 'gpudask-messages');

  constructor() {
    this.node.setAttribute('role', 'status');
  }

  update(lines: StatusLine[]): void {
    const key = lines.map(l => `${l.level}:${l.text}:${l.detail ?? ''}`).join('\n');
    if (this.node.dataset.key === key) {
      return; // unchanged: do not make screen readers repeat it
    }
    this.node.dataset.key = key;
    this.node.replaceChildren(
      ...lines.map(line => {
        const node = el('div', `gpudask-message gpudask-${line.level}`);
        node.append(
          el('span', 'gpudask-visually-hidden', `${LEVEL_WORD[line.level]}: `),
          line.text
        );
        if (line.detail) {
          const why = el('details', 'gpudask-message-detail');
          why.append(el('summary', undefined, 'Why?'), el('div', undefined, line.detail));
          node.append(why);
        }
        return node;
      })
    );
  }
}
