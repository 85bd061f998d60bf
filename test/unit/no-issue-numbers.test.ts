import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Tests, sources, docs, benches and configs say what they check and why, never which internal
 * issue or design section they came from: those numbers mean nothing to a reader of the
 * repository (the design document is not in it). Another project's issue cited as a source
 * (`owner/repo#574`) is fine; a bare issue number, with or without its item, or a section of
 * the design is not.
 */
const ROOT = join(import.meta.dirname, '../..');
const SCANNED = ['test', 'src', 'docs', 'bench', 'config', 'README.md'];
/** Generated or binary: not text anyone wrote. */
const SKIP_DIRS = new Set(['node_modules', 'out', 'artifacts']);
const BINARY = /\.(png|jpe?g|gif|ico|der|p12)$/i;

/** The pattern `grep -rniE` is given to find them (the section sign escaped: this file passes). */
const INTERNAL = /issue ?#?[0-9]|\(#[0-9]+\)|design \u00a7/i;

/** `file:line: text` of every line that cites an internal number. */
function citations(file: string, text: string): string[] {
  return text
    .split('\n')
    .flatMap((line, i) => (INTERNAL.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

function files(path: string): string[] {
  const entries = (() => {
    try {
      return readdirSync(path, { withFileTypes: true });
    } catch {
      return null; // a file
    }
  })();
  if (entries === null) return BINARY.test(path) ? [] : [path];
  return entries.flatMap((d) =>
    d.isDirectory() && SKIP_DIRS.has(d.name) ? [] : files(join(path, d.name)),
  );
}

describe('no internal issue numbers', () => {
  const issue = (n: number) => ['Issue', n].join(' ');
  it.each([
    [`${issue(11)} item 9: the claims of the docs`, 1],
    [`pauses everywhere (${issue(17).toLowerCase()})`, 1],
    [`flows (${'#'}19) reach rules`, 1],
    [`${'issue'}#19`, 1],
    [`${'Design'} \u00a7 Responses: one line`, 1],
    ['a replica cut off (docker/sbx-releases#574), event #41, seq 7', 0],
    ['the zod issue list; issues of the config', 0],
  ])('%j: %d citation(s)', (line, count) => {
    expect(citations('f.ts', line)).toHaveLength(count);
  });

  it('none in test/, src/, docs/, bench/, config/ or README.md', () => {
    const all = SCANNED.flatMap((p) => files(join(ROOT, p)));
    expect(all.length).toBeGreaterThan(300);
    const found = all.flatMap((f) =>
      citations(relative(ROOT, f).split(sep).join('/'), readFileSync(f, 'utf8')),
    );
    expect(found).toEqual([]);
  });
});
