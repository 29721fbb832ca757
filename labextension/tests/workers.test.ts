// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import {
  COMPACT_WIDTH,
  OTHERS,
  WorkersSection,
  countsText,
  visibleColumns,
  workerLayout
} from '../src/view/workers';
import { worker } from './fixtures';

describe('workers', () => {
  it('uses cards below 320 px, or where the columns would not fit', () => {
    expect(workerLayout(250)).toBe('cards');
    expect(workerLayout(COMPACT_WIDTH - 1, 3)).toBe('cards');
    expect(workerLayout(COMPACT_WIDTH, 3)).toBe('table');
    expect(workerLayout(450, 9)).toBe('cards');
    expect(workerLayout(1000, 9)).toBe('table');
    expect(workerLayout(0)).toBe('table'); // not laid out yet
  });

  it('leaves out the columns that are unknown for every worker', () => {
    const cpu = [worker('tcp://a:1', '0'), worker('tcp://a:2', '1')];
    expect(visibleColumns(cpu).map(c => c.heading)).toEqual([
      'Worker',
      'Host',
      'Host memory',
      'Running',
      'Ready',
      'Results held'
    ]);
    const gpu = [
      worker('tcp://a:1', '0', {
        gpu: { device: 'G', name: 'H200', utilization: 50, memory_used: 1, memory_total: 2 }
      })
    ];
    expect(visibleColumns(gpu).map(c => c.heading)).toContain('GPU memory');
  });

  it('shows counts, memory bars, and marks the workers that are not ours', () => {
    const section = new WorkersSection();
    const workers = [
      worker('tcp://a:1', 'mine', { executing: 2, ready: 1, in_memory: 16 }),
      worker('tcp://a:2', 'theirs', { ours: false })
    ];
    expect(countsText(workers[0])).toBe('2 running · 1 ready · 16 results held');
    expect(section.update(workers, 250)).toBe('cards');
    expect(section.node.querySelectorAll('.gpudask-worker-card')).toHaveLength(2);
    expect(section.node.textContent).toContain('2 running · 1 ready · 16 results held');
    expect(section.node.querySelectorAll('.gpudask-badge')).toHaveLength(1);
    expect(section.node.querySelector('.gpudask-badge')?.textContent).toBe(OTHERS);
    expect(section.node.querySelectorAll('.gpudask-bar').length).toBe(2); // host memory
    expect(section.update(workers, 1200)).toBe('table');
    const cells = [...section.node.querySelectorAll('tbody tr:first-child td')].map(
      c => c.textContent
    );
    expect(cells.slice(-3)).toEqual(['2', '1', '16']);
    expect(section.node.querySelector('h3')?.textContent).toBe('Workers (2)');
  });
});
