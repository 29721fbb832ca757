/**
 * The room of a shared GPU server: a block per GPU (its holders, the memory no share is promised
 * yet, memory and utilisation now), then the holders this user may see: their own kernels (the
 * one this view follows marked "you") and, where the room-names option shows names, everybody;
 * the others are counted, with how many are idle or above their share. Hidden where the frames
 * carry no room (a machine nobody else uses, or nobody holds a share).
 */
import { deviceTitle } from './devices';
import { bar, el, setBar, setChildren, setText } from './dom';
import { DeviceInfo, RoomGpu, RoomHolder, RoomInfo } from './frame';
import { formatBytes, formatDuration, formatPercent, fraction } from './format';

function counted(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "4 holders · 12 GiB not promised" */
export function gpuFacts(gpu: RoomGpu): string {
  return `${counted(gpu.holders, 'holder')} · ${formatBytes(gpu.not_promised)} not promised`;
}

/** "12 s ago", "just now" (a holder's last work, seen at `now`). */
export function sinceText(lastWork: number, now: number): string {
  const seconds = Math.round(now - lastWork);
  return seconds < 1 ? 'just now' : `${formatDuration(seconds)} ago`;
}

/** "3.2 GiB of 17 GiB · 12 % busy · last work 12 s ago" (the share alone where use is unknown);
 * a lent share: "3.2 GiB of 15 GiB lent (7 GiB relied on) · …". */
export function holderText(holder: RoomHolder, now: number): string {
  // a lent share says so, with what the holder can rely on whoever comes
  const share =
    holder.relied_on === null
      ? formatBytes(holder.share)
      : `${formatBytes(holder.share)} lent (${formatBytes(holder.relied_on)} relied on)`;
  const parts = [
    holder.used === null ? `share ${share}` : `${formatBytes(holder.used)} of ${share}`
  ];
  if (holder.utilization !== null) {
    parts.push(`${formatPercent(holder.utilization)} busy`);
  }
  parts.push(`last work ${sinceText(holder.last_work, now)}`);
  return parts.join(' · ');
}

/** "3 other students · 1 idle · 1 above their share"; "" when every holder is shown. */
export function othersText(gpu: RoomGpu): string {
  if (gpu.others === 0) {
    return '';
  }
  const parts = [counted(gpu.others, 'other student')];
  if (gpu.others_idle > 0) {
    parts.push(`${gpu.others_idle} idle`);
  }
  if (gpu.others_above > 0) {
    parts.push(`${gpu.others_above} above their share`);
  }
  return parts.join(' · ');
}

/** What the section says under its GPUs: who is named, and what idle means. */
export function roomNote(room: RoomInfo): string {
  const idle = `Idle: no work for ${formatDuration(room.idle_after)}.`;
  const lent = room.gpus.some(gpu => gpu.shown.some(h => h.relied_on !== null))
    ? ' Shares are lent while a GPU has room and shrink as students arrive, never below what ' +
      'each relies on.'
    : '';
  const note = room.names
    ? idle
    : `Other students are counted, not named (the room-names option names them). ${idle}`;
  return note + lent;
}

function holderRow(holder: RoomHolder, now: number): HTMLLIElement {
  const row = el('li', holder.you ? 'gpudask-room-holder gpudask-room-you' : 'gpudask-room-holder');
  // spaces between the parts: a screen reader reads "you share 7 GiB", not "youshare"
  row.append(
    el('span', 'gpudask-room-who', holder.who),
    ' ',
    el('span', undefined, holderText(holder, now))
  );
  if (holder.above) {
    row.append(' ', el('span', 'gpudask-badge', 'above share'));
  }
  if (holder.idle) {
    row.append(' ', el('span', 'gpudask-badge', 'idle'));
  }
  return row;
}

class GpuBlock {
  readonly node = el('div', 'gpudask-room-gpu');
  private readonly swatch = el('span', 'gpudask-swatch');
  private readonly title = el('span', 'gpudask-room-title');
  private readonly facts = el('span', 'gpudask-room-facts');
  private readonly name = el('div', 'gpudask-room-name');
  private readonly util = bar('gpudask-util');
  private readonly memory = bar('gpudask-memory');
  private readonly holders = el('ul', 'gpudask-room-holders');
  private readonly others = el('div', 'gpudask-room-others');
  private key = '';

  constructor() {
    const head = el('div', 'gpudask-room-head');
    this.swatch.setAttribute('aria-hidden', 'true');
    head.append(this.swatch, this.title, this.facts);
    const bars = el('div', 'gpudask-bars');
    bars.append(this.util, this.memory);
    this.node.append(head, this.name, bars, this.holders, this.others);
  }

  update(gpu: RoomGpu, device: DeviceInfo | undefined, color: string, now: number): void {
    this.swatch.style.backgroundColor = color;
    this.node.style.setProperty('--gpudask-device-color', color);
    setText(this.title, device ? deviceTitle(device) : `GPU ${gpu.label}`);
    setText(this.facts, gpuFacts(gpu));
    setText(this.name, gpu.name);
    const util = gpu.utilization;
    setBar(this.util, util === null ? null : util / 100, `utilisation ${formatPercent(util)}`);
    setBar(
      this.memory,
      fraction(gpu.memory_used, gpu.memory_total),
      `memory ${formatBytes(gpu.memory_used)} / ${formatBytes(gpu.memory_total)}`
    );
    const rows = gpu.shown.map(holder => holderRow(holder, now));
    const key = rows.map(row => `${row.className}:${row.textContent}`).join('\n');
    if (key !== this.key) {
      this.key = key;
      this.holders.replaceChildren(...rows);
    }
    this.holders.hidden = rows.length === 0;
    const others = othersText(gpu);
    setText(this.others, others);
    this.others.hidden = others === '';
  }
}

export class RoomSection {
  readonly node = el('section', 'gpudask-room');
  private readonly heading = el('h3', 'gpudask-section-title');
  private readonly list = el('div', 'gpudask-room-gpus');
  private readonly note = el('div', 'gpudask-room-note');
  private blocks = new Map<string, GpuBlock>();

  constructor() {
    this.node.setAttribute('aria-label', 'Room');
    this.node.append(this.heading, this.list, this.note);
    this.node.hidden = true;
  }

  /**
   * Redraw from the frames' room (null: none) as seen at `now`; the GPUs take the colours of the
   * frame's devices where they are among them. Returns the number of GPU blocks.
   */
  update(
    room: RoomInfo | null,
    now: number,
    devices: DeviceInfo[],
    colorOf: (index: number) => string
  ): number {
    if (room === null || room.gpus.length === 0) {
      this.node.hidden = true;
      this.list.replaceChildren();
      this.blocks.clear();
      return 0;
    }
    this.node.hidden = false;
    const holders = room.gpus.reduce((sum, gpu) => sum + gpu.holders, 0);
    setText(
      this.heading,
      `Room: ${counted(holders, 'holder')} on ${counted(room.gpus.length, 'GPU')}`
    );
    const next = new Map<string, GpuBlock>();
    room.gpus.forEach((gpu, i) => {
      const block = this.blocks.get(gpu.id) ?? next.get(gpu.id) ?? new GpuBlock();
      next.set(gpu.id, block);
      const index = devices.findIndex(d => d.id === gpu.id);
      block.update(gpu, devices[index], colorOf(index >= 0 ? index : i), now);
    });
    setChildren(
      this.list,
      [...next.values()].map(block => block.node)
    );
    this.blocks = next;
    setText(this.note, roomNote(room));
    return next.size;
  }
}
