import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A fresh real-path temp folder, removed after the test file. */
export function tempDir(prefix = 'trajgate-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
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
