// Builds dist/ only when it is older than the code on disk: `npm start` and the test run both
// start from here, so an up-to-date build is not compiled again (a full build takes 10–50 s).
// `npm run build` writes dist/.build-stamp last; any file under src/ (the review page's
// included) or a tsconfig newer than it, or no stamp at all, means stale. Exits non-zero,
// with the compiler's output, when the build fails.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const STAMP = join(ROOT, 'dist', '.build-stamp');

/** The newest modification time under `dir` (a directory's own counts: a file removed), in ms. */
function newest(dir) {
  let latest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const time = entry.isDirectory() ? newest(path) : statSync(path).mtimeMs;
    if (time > latest) latest = time;
  }
  return latest;
}

function stampTime() {
  try {
    return statSync(STAMP).mtimeMs;
  } catch {
    return null;
  }
}

const built = stampTime();
const source = Math.max(
  newest(join(ROOT, 'src')),
  ...['tsconfig.json', 'tsconfig.hook.json'].map((f) => statSync(join(ROOT, f)).mtimeMs),
);
if (built === null || built < source) {
  process.stderr.write(
    `dist/ is ${built === null ? 'not built' : 'older than src/'}: building (npm run build)\n`,
  );
  const started = Date.now();
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const build = spawnSync(npm, ['run', 'build', '--silent'], {
    cwd: ROOT,
    encoding: 'utf8',
    shell: process.platform === 'win32',
  });
  if (build.error !== undefined || build.status !== 0) {
    const output = `${build.stdout ?? ''}${build.stderr ?? ''}`.trim();
    process.stderr.write(
      `npm run build failed (${build.error?.message ?? `exit ${build.status}`}):\n${output}\n`,
    );
    process.exit(1);
  }
  process.stderr.write(`built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
