import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/errors.js';

/**
 * The error contract: one error class, every code src/ uses is one of ERRORS' (no free-string
 * codes, no unused ones), and the table in docs/errors.md lists each code with the HTTP status
 * and exit code ERRORS gives it.
 */
const ROOT = join(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
/** The review page is a client of the API: its errors mirror the answers it gets. */
const PAGE = join(SRC, 'review', 'page');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory()
      ? sources(join(dir, d.name))
      : d.name.endsWith('.ts')
        ? [join(dir, d.name)]
        : [],
  );
}

/** Codes written as string literals, in any quotes. */
const codesIn = (text: string) =>
  new Set([...text.matchAll(/(['"`])(E_[A-Z_]+)\1/g)].map((m) => m[2] as string));

/** `| \`E_X\` | 404 | — | meaning |` rows: code → [status, exit] as written. */
function tableRows(section: string): Map<string, [string, string]> {
  const rows = section.matchAll(/^\| `(E_[A-Z_]+)` \| ([^|]*) \| ([^|]*) \|/gm);
  return new Map([...rows].map((m) => [m[1] as string, [m[2]!.trim(), m[3]!.trim()]]));
}

const cell = (value: number | null) => (value === null ? '—' : String(value));

describe('error codes', () => {
  const files = sources(SRC);
  const used = new Map<string, string[]>();
  for (const file of files) {
    for (const code of codesIn(readFileSync(file, 'utf8'))) {
      used.set(code, [...(used.get(code) ?? []), relative(ROOT, file)]);
    }
  }
  const doc = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
  const section = /\n## The codes\n([\s\S]*?)(?:\n## |$)/.exec(doc)?.[1] ?? '';
  const defined = Object.keys(ERRORS);

  it('finds quoted codes in a text and rows in a table (the scans themselves)', () => {
    const text = 'throw new TrajgateError(\'E_X_Y\', "E_Q"); `E_Z`; // E_BARE, ENOENT';
    expect([...codesIn(text)]).toEqual(['E_X_Y', 'E_Q', 'E_Z']);
    const table =
      '| code | HTTP | exit | meaning |\n| `E_A` | 404 | — | a |\n| `E_B` | — | 2 | b |';
    expect([...tableRows(table)]).toEqual([
      ['E_A', ['404', '—']],
      ['E_B', ['—', '2']],
    ]);
  });

  it('every code src/ uses is an ErrorCode', () => {
    expect(used.size).toBeGreaterThan(30);
    const unknown = [...used].filter(([code]) => !Object.hasOwn(ERRORS, code));
    expect(Object.fromEntries(unknown)).toEqual({});
  });

  it('every ErrorCode is used somewhere in src/', () => {
    expect(defined.filter((code) => !used.has(code))).toEqual([]);
  });

  it('docs/errors.md lists every code, and only those, with its HTTP status and exit code', () => {
    const expected = Object.entries(ERRORS).map(([code, a]) => [
      code,
      [cell(a.status), cell(a.exit)],
    ]);
    expect(Object.fromEntries(tableRows(section))).toEqual(Object.fromEntries(expected));
  });

  it('TrajgateError is the only error class outside the review page', () => {
    const classes = files
      .filter((file) => !file.startsWith(PAGE))
      .flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(/class (\w+) extends (\w*Error)\b/g)].map(
          (m) => `${relative(ROOT, file)}: ${m[1]} extends ${m[2]}`,
        ),
      );
    expect(classes).toEqual(['src/errors.ts: TrajgateError extends Error']);
  });
});
