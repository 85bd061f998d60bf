// What bench/proxy/run.mjs and bench/tls/run.mjs do before they measure: read the options they
// share, pin the processes to cores, warn when the machine is already busy, make a temp folder.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuBusy } from './proxy/proc-stats.mjs';
import { positiveInt, which } from './proxy/procs.mjs';

export const log = (line) => process.stdout.write(line + '\n');

/**
 * The command line: `--duration` and `--warmup` (seconds) and `--connections`, then the run's
 * own `options`; `int(name)` reads one that must be a positive integer.
 */
export function benchArgs(options) {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '2' },
      connections: { type: 'string', default: '50' },
      ...options,
    },
  });
  return { values, int: (name) => positiveInt(values, name) };
}

/**
 * Load generators and the upstream on core 0, the proxy under test alone on core 1: with two
 * cores and taskset, else unpinned. `pin(core, cmd, args)` gives the arguments of a start.
 */
export const pinned = availableParallelism() >= 2 && which('taskset') !== null;
export const pin = (core, cmd, args) =>
  pinned ? ['taskset', ['-c', `${core}`, cmd, ...args]] : [cmd, args];

/** The share of the CPU busy before the run; over 10 %, a warning that figures will be noisy. */
export async function busyBefore() {
  const busy = await cpuBusy();
  if (busy > 0.1) {
    log(
      `warning: CPU already ${(busy * 100).toFixed(0)}% busy before the run; figures will be noisy`,
    );
  }
  return busy;
}

/** A temp folder for the run (`trajgate-<name>-bench-…`), removed when the process exits. */
export function runTmp(name) {
  const tmp = mkdtempSync(join(tmpdir(), `trajgate-${name}-bench-`));
  process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
  return tmp;
}
