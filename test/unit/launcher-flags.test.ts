import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The Node flags trajgate runs with live on one line: the shebang of src/cli/main.ts. Every
// launcher runs that file as a program, so none may carry flags of its own (they would drift).
const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const SHEBANG = /^#!\/usr\/bin\/env -S node( --[a-z0-9-]+(=\S+)?)+$/;
const NODE_FLAG = /\bnode\s+--|"node",\s*"--/;

describe('launcher flags', () => {
  const shebang = read('src/cli/main.ts').split('\n', 1)[0] as string;

  it('lives on the first line of src/cli/main.ts, carried into dist/ by tsc', () => {
    expect(shebang).toMatch(SHEBANG);
    expect(shebang).toContain('--max-semi-space-size=');
    expect(shebang).toContain('--single-threaded-gc');
    expect(read('dist/cli/main.js').split('\n', 1)[0]).toBe(shebang);
  });

  it('npm start runs the built file as a program, with no flags of its own', () => {
    const pkg = JSON.parse(read('package.json')) as {
      scripts: Record<string, string>;
      bin: Record<string, string>;
    };
    expect(pkg.scripts['start']).toMatch(/(^|&& )\.\/dist\/cli\/main\.js start$/);
    expect(pkg.bin['trajgate']).toBe('dist/cli/main.js');
    for (const [name, script] of Object.entries(pkg.scripts)) {
      expect(script, `scripts.${name}`).not.toMatch(NODE_FLAG);
    }
  });

  it('the Dockerfile runs the built file as a program, with no flags of its own', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/app\/dist\/cli\/main\.js"\]$/m);
    expect(dockerfile).toMatch(/chmod \+x \/app\/dist\/cli\/main\.js/);
    expect(dockerfile).not.toMatch(NODE_FLAG);
    expect(dockerfile).not.toMatch(/NODE_OPTIONS/);
  });
});
