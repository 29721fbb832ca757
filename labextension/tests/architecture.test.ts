/**
 * The shape of src/, checked: no import cycle, type-only imports included (a type-only cycle
 * costs nothing at run time but ties two modules together for every reader), and the facts the
 * kernel shares with the view come from the generated modules only.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry =>
    entry.isDirectory()
      ? sources(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : []
  );
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/g;

export function graph(files: Map<string, string>): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const [file, text] of files) {
    const targets = new Set<string>();
    for (const match of text.matchAll(IMPORT)) {
      targets.add(resolve(dirname(file), match[1]) + '.ts');
    }
    edges.set(file, new Set([...targets].filter(t => files.has(t))));
  }
  return edges;
}

/** Every cycle's modules (strongly connected components of more than one module). */
export function cycles(edges: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) {
        found.push(component.sort());
      }
    }
  };
  for (const node of [...edges.keys()].sort()) {
    if (!index.has(node)) {
      visit(node);
    }
  }
  return found;
}

describe('the shape of src/', () => {
  const files = new Map(sources(SRC).map(f => [f, readFileSync(f, 'utf8')]));

  it('has no import cycle, type-only imports included', () => {
    const found = cycles(graph(files)).map(c => c.map(f => relative(SRC, f)));
    expect(found).toEqual([]);
  });

  it('finds a cycle where there is one, through a type-only import too', () => {
    const made = new Map([
      ['/x/a.ts', "import type { B } from './b';"],
      ['/x/b.ts', "import { C } from './c';"],
      ['/x/c.ts', "export { A } from './a';"],
      ['/x/d.ts', "import { A } from './a';"]
    ]);
    expect(cycles(graph(made))).toEqual([['/x/a.ts', '/x/b.ts', '/x/c.ts']]);
  });

  it("writes the kernel's own words only in the generated modules", () => {
    // a fact the kernel also knows, spelled out by hand, would drift from it
    // (the message types are checked by the compiler: they are typed with the generated union)
    const shared = [
      'GPUDASK_CONTROL_RESULT',
      'gpudask_jupyter.magics',
      'gpudask/api/',
      'vnd.gpudask',
      '#d9534f'
    ];
    for (const [file, text] of files) {
      if (file.endsWith('.generated.ts')) {
        continue;
      }
      for (const word of shared) {
        expect(text.includes(word), `${relative(SRC, file)} spells out ${word}`).toBe(false);
      }
    }
  });
});
