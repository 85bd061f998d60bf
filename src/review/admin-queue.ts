import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { TrajgateError } from '../errors.js';

/** Admin reads run one at a time; this many more may wait for their turn. */
export const ADMIN_WAITING = 16;
/** After a read that took T, the next starts T × REST later: reads get at most 1/5 of the time. */
export const ADMIN_REST = 4;
/** Seconds a refused caller is told to wait (`Retry-After`). */
export const RETRY_AFTER = 1;

/**
 * Bounds the admin API's reads on the proxy's event loop, which is the agents': one at a time,
 * each started on a later turn than the one that queued it (after the agents' pending I/O)
 * and after a rest proportional to the previous one's duration, so that however hard an
 * operator's page or script polls, reads take at most 1 / (1 + ADMIN_REST) of the time. At
 * most ADMIN_WAITING wait; past that a call is refused at once with 429 (E_BUSY).
 */
export class AdminQueue {
  #busy = false;
  #restUntil = 0;
  readonly #line: (() => void)[] = [];

  async run<T>(job: () => T | Promise<T>): Promise<T> {
    if (this.#busy) {
      if (this.#line.length >= ADMIN_WAITING) {
        throw new TrajgateError(
          'E_BUSY',
          `the admin API is busy (${ADMIN_WAITING} calls waiting); retry after ${RETRY_AFTER} s`,
        );
      }
      await new Promise<void>((resolve) => this.#line.push(resolve));
    } else this.#busy = true;
    try {
      const rest = this.#restUntil - performance.now();
      await (rest > 0 ? sleep(rest) : nextTurn());
      const start = performance.now();
      try {
        return await job();
      } finally {
        const end = performance.now();
        this.#restUntil = end + (end - start) * ADMIN_REST;
      }
    } finally {
      // The turn passes straight to the next in line, if any.
      const next = this.#line.shift();
      if (next) next();
      else this.#busy = false;
    }
  }
}
