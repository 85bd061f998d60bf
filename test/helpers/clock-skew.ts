import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The environment that puts a process's wall clock `offset` off (`+30s`, `-2m`; libfaketime,
 * Debian's faketime package), its monotonic clock left alone: a machine whose NTP stopped.
 * The library is preloaded, not run through the `faketime` wrapper: the wrapper forks, and
 * killing it would leave the process running. Redis is no candidate: its jemalloc calls
 * clock_gettime before libfaketime is ready, and the library gives up.
 */
export function skewedClock(offset: string): NodeJS.ProcessEnv {
  const lib = readdirSync('/usr/lib')
    .map((dir) => join('/usr/lib', dir, 'faketime/libfaketime.so.1'))
    .find((path) => existsSync(path));
  if (lib === undefined)
    throw new Error(
      'libfaketime.so.1 not found under /usr/lib/*/faketime/: apt-get install faketime',
    );
  return { LD_PRELOAD: lib, FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}
