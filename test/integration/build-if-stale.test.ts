import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * `npm start` builds only a stale dist/: after the test run's own build (global setup) the
 * script finds the stamp fresh and compiles nothing.
 */
const ROOT = join(import.meta.dirname, '../..');
const STAMP = join(ROOT, 'dist', '.build-stamp');

describe('npm start on an up-to-date dist/', () => {
  it('builds nothing: no output, the stamp untouched', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts['start']).toBe(
      'node scripts/build-if-stale.mjs && ./bin/trajgate.cjs start',
    );
    const before = statSync(STAMP).mtimeMs;
    const run = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-if-stale.mjs')], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('');
    expect(statSync(STAMP).mtimeMs).toBe(before);
  });
});
