import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Every error code the source can answer with is in the README's error table. */
const ROOT = join(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory()
      ? sources(join(dir, d.name))
      : d.name.endsWith('.ts')
        ? [join(dir, d.name)]
        : [],
  );
}

const codesIn = (text: string) => new Set([...text.matchAll(/'(E_[A-Z_]+)'/g)].map((m) => m[1]));

describe('error codes', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const table = /## Error codes\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
  const documented = new Set([...table.matchAll(/^\| `(E_[A-Z_]+)` \|/gm)].map((m) => m[1]));
  const used = new Set(
    sources(join(ROOT, 'src')).flatMap((f) => [...codesIn(readFileSync(f, 'utf8'))]),
  );

  it('finds codes in a text (the scan itself)', () => {
    expect([...codesIn("throw new ApiError(404, 'E_X_Y', 'no')")]).toEqual(['E_X_Y']);
  });

  it('the README table lists every code in src/', () => {
    expect(used.size).toBeGreaterThan(20);
    expect([...used].filter((c) => !documented.has(c)).sort()).toEqual([]);
  });

  it('the README table lists no code src/ does not use', () => {
    expect([...documented].filter((c) => !used.has(c)).sort()).toEqual([]);
  });
});
