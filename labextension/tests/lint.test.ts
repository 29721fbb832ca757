import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';

const cwd = fileURLToPath(new URL('..', import.meta.url));

async function problems(code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd });
  const [result] = await eslint.lintText(code, { filePath: 'src/view/example.ts' });
  return result.messages.map(m => `${m.ruleId}: ${m.message}`);
}

describe('eslint config', () => {
  it('forbids HTML parsing in every spelling', async () => {
    for (const code of [
      'export const f = (e: HTMLElement, s: string): void => { e.innerHTML = s; };',
      'export const f = (e: HTMLElement, s: string): void => { e.outerHTML = s; };',
      "export const f = (e: HTMLElement, s: string): void => { e.insertAdjacentHTML('beforeend', s); };",
      "export const f = (e: HTMLElement, s: string): void => { e['innerHTML'] = s; };",
      'export const f = (s: string): void => { document.write(s); };'
    ]) {
      const found = await problems(code);
      expect(found.join('\n'), code).toMatch(/textContent/);
    }
  });

  it('allows textContent', async () => {
    expect(
      await problems(
        'export const f = (e: HTMLElement, s: string): void => { e.textContent = s; };\n'
      )
    ).toEqual([]);
  });
});
