import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * Builds `dist/` before the tests when it is older than the code on disk (the same script
 * `npm start` runs): tests spawn `bin/trajgate.cjs` (dist/) and child gateways, so `npx vitest run
 * FILE` after an edit would otherwise run the previous build. `npm test` builds in its
 * `pretest`, so here the build is found fresh and nothing happens.
 */
export default function setup(): void {
  const script = join(import.meta.dirname, '..', 'scripts', 'build-if-stale.mjs');
  const run = spawnSync(process.execPath, [script], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (run.error !== undefined || run.status !== 0)
    throw new Error(
      `the build failed (${run.error?.message ?? `exit ${run.status}`}): the tests would run a stale dist/`,
    );
}
