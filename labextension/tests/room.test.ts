// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GpuDaskView } from '../src/view/render';
import { applyFrame, emptyState } from '../src/view/state';
import {
  RoomSection,
  gpuFacts,
  holderText,
  othersText,
  roomNote,
  sinceText
} from '../src/view/room';
import { GiB, T0, device, frame, room, roomGpu, roomHolder } from './fixtures';

const EVIL = '<img src=x onerror=alert(1)>';
const colorOf = (i: number): string => ['#111111', '#222222', '#333333'][i];

/** The text of every node matching `selector` under `node`. */
function texts(node: HTMLElement, selector: string): string[] {
  return [...node.querySelectorAll(selector)].map(n => n.textContent ?? '');
}

/** A student's view of GPU 0: themselves and three others, one idle, one above their share. */
const STUDENT = roomGpu({
  holders: 4,
  not_promised: 12 * GiB,
  memory_used: 40 * GiB,
  memory_total: 140 * GiB,
  utilization: 37,
  shown: [roomHolder({ used: 3.2 * GiB, share: 17 * GiB, utilization: 12, last_work: T0 - 12 })],
  others: 3,
  others_idle: 1,
  others_above: 1
});

describe('the room section', () => {
  let container: HTMLElement;

  beforeEach(() => {
    container = document.createElement('div');
    document.body.append(container);
  });

  afterEach(() => {
    document.body.replaceChildren();
  });

  it('says each GPU, its holders and what is not promised in words', () => {
    expect(gpuFacts(STUDENT)).toBe('4 holders · 12 GiB not promised');
    expect(gpuFacts(roomGpu({ holders: 1, not_promised: 0 }))).toBe('1 holder · 0 B not promised');
    expect(holderText(STUDENT.shown[0], T0)).toBe(
      '3.2 GiB of 17 GiB · 12 % busy · last work 12 s ago'
    );
    // use unknown (no NVML): the share alone
    const unknown = roomHolder({ used: null, share: 7 * GiB, last_work: T0 - 3600 });
    expect(holderText(unknown, T0)).toBe('share 7 GiB · last work 60 min ago');
    expect(sinceText(T0 - 0.3, T0)).toBe('just now');
    expect(othersText(STUDENT)).toBe('3 other students · 1 idle · 1 above their share');
    expect(othersText(roomGpu({ others: 1 }))).toBe('1 other student');
    expect(othersText(roomGpu())).toBe('');
    expect(roomNote(room())).toBe(
      'Other students are counted, not named (the room-names option names them). ' +
        'Idle: no work for 10 min.'
    );
    expect(roomNote(room([], { names: true, idle_after: 120 }))).toBe('Idle: no work for 2 min.');
  });

  it('says where a share is lent and what its holder can rely on', () => {
    // a 16 GiB GPU nobody planned: one holder may take 15 GiB, all of it lent
    const alone = roomHolder({ used: 2 * GiB, share: 15 * GiB, relied_on: 15 * GiB });
    expect(holderText(alone, T0)).toBe(
      '2 GiB of 15 GiB lent (15 GiB relied on) · last work 60 s ago'
    );
    const unknown = roomHolder({ used: null, share: 8 * GiB, relied_on: 4 * GiB });
    expect(holderText(unknown, T0)).toBe('share 8 GiB lent (4 GiB relied on) · last work 60 s ago');
    const lentRoom = room([roomGpu({ not_promised: 15 * GiB, shown: [alone] })], {
      names: true,
      idle_after: 120
    });
    expect(roomNote(lentRoom)).toBe(
      'Idle: no work for 2 min. Shares are lent while a GPU has room and shrink as students ' +
        'arrive, never below what each relies on.'
    );
  });

  it("draws a student's room: their own row marked, the others counted", () => {
    const section = new RoomSection();
    container.append(section.node);
    expect(section.update(room([STUDENT]), T0, [device('GPU-aaaa')], colorOf)).toBe(1);
    const node = section.node;
    expect(node.hidden).toBe(false);
    expect(node.querySelector('h3')?.textContent).toBe('Room: 4 holders on 1 GPU');
    expect(texts(node, '.gpudask-room-title')).toEqual(['GPU 0']);
    expect(texts(node, '.gpudask-room-facts')).toEqual(['4 holders · 12 GiB not promised']);
    expect(texts(node, '.gpudask-room-name')).toEqual(['NVIDIA H200']);
    expect(texts(node, '.gpudask-bar-text')).toEqual([
      'utilisation 37 %',
      'memory 40 GiB / 140 GiB'
    ]);
    const fills = [...node.querySelectorAll<HTMLElement>('.gpudask-bar-fill')].map(
      f => f.style.width
    );
    expect(fills).toEqual(['37%', '28.6%']);
    const rows = node.querySelectorAll('.gpudask-room-holder');
    expect(rows).toHaveLength(1);
    expect(rows[0].classList.contains('gpudask-room-you')).toBe(true);
    expect(rows[0].querySelector('.gpudask-room-who')?.textContent).toBe('you');
    expect(rows[0].textContent).toBe('you 3.2 GiB of 17 GiB · 12 % busy · last work 12 s ago');
    expect(rows[0].querySelectorAll('.gpudask-badge')).toHaveLength(0);
    expect(texts(node, '.gpudask-room-others')).toEqual([
      '3 other students · 1 idle · 1 above their share'
    ]);
    expect(node.querySelector('.gpudask-room-note')?.textContent).toContain('counted, not named');
    // the GPU's colour is its device's in the rest of the view
    const swatch = node.querySelector<HTMLElement>('.gpudask-swatch');
    expect(swatch?.style.backgroundColor).toBe('rgb(17, 17, 17)');
  });

  it("draws an instructor's room: every holder named, flags as badges, names as text", () => {
    const section = new RoomSection();
    const gpus = [
      roomGpu({
        id: 'GPU-x',
        label: '0',
        holders: 0,
        shown: [],
        memory_used: null,
        utilization: null
      }),
      roomGpu({
        id: 'GPU-y',
        label: '1',
        holders: 2,
        shown: [
          roomHolder({ who: 'alice', you: false, used: 9 * GiB, share: 4 * GiB, above: true }),
          roomHolder({ who: EVIL, you: false, idle: true, last_work: T0 - 900 })
        ]
      })
    ];
    // GPU-y is the frame's second device: its colour; GPU-x is not among them: its place's
    const devices = [device('GPU-z'), device('GPU-y', { label: '1' })];
    expect(section.update(room(gpus, { names: true }), T0, devices, colorOf)).toBe(2);
    const node = section.node;
    expect(node.querySelector('h3')?.textContent).toBe('Room: 2 holders on 2 GPUs');
    expect(texts(node, '.gpudask-room-facts')).toEqual([
      '0 holders · 11 GiB not promised',
      '2 holders · 11 GiB not promised'
    ]);
    expect(texts(node, '.gpudask-bar-text').slice(0, 2)).toEqual([
      'utilisation –',
      'memory – / 16 GiB'
    ]);
    const colors = [...node.querySelectorAll<HTMLElement>('.gpudask-swatch')].map(
      s => s.style.backgroundColor
    );
    expect(colors).toEqual(['rgb(17, 17, 17)', 'rgb(34, 34, 34)']);
    expect(texts(node, '.gpudask-room-who')).toEqual(['alice', EVIL]);
    expect(texts(node, '.gpudask-room-holder .gpudask-badge')).toEqual(['above share', 'idle']);
    expect(texts(node, '.gpudask-room-holder')[0]).toBe(
      'alice 9 GiB of 4 GiB · last work 60 s ago above share'
    );
    expect(node.querySelectorAll('.gpudask-room-you')).toHaveLength(0);
    expect(node.querySelector('img')).toBeNull();
    const others = node.querySelectorAll<HTMLElement>('.gpudask-room-others');
    expect([...others].every(o => o.hidden)).toBe(true);
    expect(node.querySelector('.gpudask-room-note')?.textContent).toBe('Idle: no work for 10 min.');
  });

  it('keeps a GPU block across frames and hides itself when the room goes', () => {
    const section = new RoomSection();
    section.update(room([STUDENT]), T0, [], colorOf);
    const block = section.node.querySelector('.gpudask-room-gpu');
    section.update(room([{ ...STUDENT, holders: 5 }]), T0 + 1, [], colorOf);
    expect(section.node.querySelector('.gpudask-room-gpu')).toBe(block);
    expect(section.node.textContent).toContain('last work 13 s ago');
    expect(section.update(null, T0 + 2, [], colorOf)).toBe(0);
    expect(section.node.hidden).toBe(true);
    expect(section.node.querySelectorAll('.gpudask-room-gpu')).toHaveLength(0);
  });

  it('comes with the frames: hidden without a room, drawn with one', () => {
    const state = applyFrame(emptyState(), frame());
    expect(state.room).toBeNull();
    const older = frame();
    delete (older as Partial<typeof older>).room; // a frame from before the room
    expect(applyFrame(emptyState(), older).room).toBeNull();

    const view = new GpuDaskView(container);
    view.update(frame());
    view.flush();
    expect(view.root.dataset.room).toBe('0');
    expect(view.root.querySelector<HTMLElement>('.gpudask-room')?.hidden).toBe(true);
    view.update(frame({ kind: 'delta', time: T0 + 1, room: room([STUDENT]) }));
    view.flush();
    expect(view.root.dataset.room).toBe('1');
    const section = view.root.querySelector<HTMLElement>('.gpudask-room');
    expect(section?.hidden).toBe(false);
    // seen at the frame's time: the holder worked 13 s before it
    expect(section?.textContent).toContain('last work 13 s ago');
    view.dispose();
  });
});
