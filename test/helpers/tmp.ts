import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, onTestFinished } from 'vitest';

/** A fresh real-path temp folder, removed after the test that made it, or after the file. */
export function tempDir(prefix = 'trajgate-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    onTestFinished(remove);
  } catch {
    // Called outside a test (a file's setup): remove it when the file is done.
    afterAll(remove);
  }
  return dir;
}

/** Creates folders and symlinks (link → target, relative to the link) under `root`. */
export function layout(
  root: string,
  dirs: readonly string[],
  links: Record<string, string> = {},
): void {
  for (const d of dirs) mkdirSync(join(root, d), { recursive: true });
  for (const [link, target] of Object.entries(links)) symlinkSync(target, join(root, link));
}

/** Every file under `dir`, as latin1 text (one byte a character), joined: what to search. */
export function textUnder(dir: string): string {
  return readdirSync(dir)
    .map((f) => join(dir, f))
    .map((p) => (statSync(p).isDirectory() ? textUnder(p) : readFileSync(p, 'latin1')))
    .join('\n');
}
