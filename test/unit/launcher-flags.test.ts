import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The Node flags trajgate runs with live on one line: the shebang of bin/trajgate.cjs. Every
// launcher runs that file as a program, so none may carry flags of its own (they would drift).
const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const SHEBANG = /^#!\/usr\/bin\/env -S node( --[a-z0-9-]+(=\S+)?)+$/;
const NODE_FLAG = /\bnode\s+--|"node",\s*"--/;

describe('launcher flags', () => {
  const shebang = read('bin/trajgate.cjs').split('\n', 1)[0] as string;

  it('live on the first line of bin/trajgate.cjs, an executable file, and nowhere in src/', () => {
    expect(shebang).toMatch(SHEBANG);
    expect(shebang).toContain('--max-semi-space-size=');
    expect(shebang).toContain('--single-threaded-gc');
    expect(statSync(join(root, 'bin/trajgate.cjs')).mode & 0o111).not.toBe(0);
    expect(read('src/cli/main.ts').startsWith('#!')).toBe(false);
    expect(read('dist/cli/main.js').startsWith('#!')).toBe(false);
  });

  it('npm start and the bin run the launcher as a program, with no flags of their own', () => {
    const pkg = JSON.parse(read('package.json')) as {
      scripts: Record<string, string>;
      bin: Record<string, string>;
    };
    expect(pkg.scripts['start']).toMatch(/(^|&& )\.\/bin\/trajgate\.cjs start$/);
    expect(pkg.bin['trajgate']).toBe('bin/trajgate.cjs');
    for (const [name, script] of Object.entries(pkg.scripts)) {
      expect(script, `scripts.${name}`).not.toMatch(NODE_FLAG);
    }
  });

  it('the Dockerfile runs the launcher as a program, with no flags of its own', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/app\/bin\/trajgate\.cjs"\]$/m);
    expect(dockerfile).toMatch(/chmod \+x \/app\/bin\/trajgate\.cjs/);
    expect(dockerfile).not.toMatch(NODE_FLAG);
    expect(dockerfile).not.toMatch(/NODE_OPTIONS/);
  });
});
