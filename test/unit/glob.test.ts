import { describe, expect, it } from 'vitest';
import { globMatcher, treeCoverer } from '../../src/guard/glob.js';

/**
 * Target globs three ways: `test` (this path matches), `reaches` (this path or one under it
 * could: what a tree read is judged by, for read rules) and treeCoverer (every path under it
 * does: what approves a tree read).
 */

// [glob, path, test, reaches]
const cases: [string, string, boolean, boolean][] = [
  ['/home/u/.ssh/**', '/home/u/.ssh/id_rsa', true, true],
  ['/home/u/.ssh/**', '/home/u/.ssh', true, true],
  ['/home/u/.ssh/**', '/home/u', false, true],
  ['/home/u/.ssh/**', '/home', false, true],
  ['/home/u/.ssh/**', '/', false, true],
  ['/home/u/.ssh/**', '/home/us', false, false],
  ['/home/u/.ssh/**', '/home/u/.sshx', false, false],
  ['/home/u/.ssh/**', '/home/u/src', false, false],
  ['/home/u/.ssh/**', '/etc', false, false],
  // A leading `**/` may match under any folder.
  ['**/.ssh/**', '/w/src', false, true],
  ['**/.env', '/w', false, true],
  ['**/.env', '/w/.env', true, true],
  // Wildcards in the middle: a prefix may stop inside the segment or before it.
  ['/w/*/secret', '/w', false, true],
  ['/w/*/secret', '/w/a', false, true],
  ['/w/*/secret', '/w/a/b', false, false],
  ['/w/a*/k', '/w/ab', false, true],
  ['/w/a*/k', '/w/b', false, false],
  ['/w/?/k', '/w/x', false, true],
  ['/w/?/k', '/w/xy', false, false],
  ['/w/**/k', '/w/a/b/c', false, true],
  ['/w/**/k', '/v', false, false],
  // Literal text ends where it ends.
  ['/x', '/x', true, true],
  ['/x', '/', false, true],
  ['/x', '/x/y', false, false],
  ['/x', '/xy', false, false],
  ['/x/\\*', '/x', false, true],
  ['/x/\\*', '/x/*', true, true],
  ['/a.b/**', '/aXb', false, false],
];

describe('test and reaches', () => {
  it.each(cases)('%s on %s: test %s, reaches %s', (glob, path, test, reaches) => {
    const m = globMatcher([glob]);
    expect(m.test(path)).toBe(test);
    expect(m.reaches(path)).toBe(reaches);
  });

  it('several globs: reaches when one does, a shared leading **/ included', () => {
    const m = globMatcher(['/w/a/**', '/w/b/k']);
    expect(m.reaches('/w')).toBe(true);
    expect(m.reaches('/w/b')).toBe(true);
    expect(m.reaches('/w/c')).toBe(false);
    const lead = globMatcher(['**/.ssh/**', '**/.env']);
    expect(lead.test('/w/x')).toBe(false);
    expect(lead.reaches('/w/x')).toBe(true);
  });

  it('a long path against many stars answers at once', () => {
    const m = globMatcher(['/w/*a*a*a*a*a*b/**']);
    const start = performance.now();
    const a = 'a'.repeat(2000);
    expect(m.reaches(`/w/${a}`)).toBe(false);
    expect(m.reaches(`/w/${a}b/c`)).toBe(true);
    expect(m.reaches(`/v/${a}`)).toBe(false);
    expect(performance.now() - start).toBeLessThan(1000);
  });
});

// [glob, tree root, every path under it matches]
const covers: [string, string, boolean][] = [
  ['/x/**', '/x', true],
  ['/x/**', '/x/y/z', true],
  ['/x/**', '/', false],
  ['/x/**', '/xy', false],
  ['/x/*/**', '/x/a', true],
  ['/x/*/**', '/x', false],
  ['**', '/', true],
  ['/**', '/', true],
  ['/**', '/etc', true],
  ['/x', '/x', false],
  ['/x/*', '/x', false],
  ['/x/**/k', '/x', false],
  ['/x\\*/**', '/x*', true],
  ['/x\\*/**', '/xa', false],
];

describe('treeCoverer', () => {
  it.each(covers)('%s covers the tree at %s: %s', (glob, root, ok) => {
    expect(treeCoverer(glob)(root)).toBe(ok);
  });
});
