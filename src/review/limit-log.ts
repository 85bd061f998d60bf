import type { Logger } from 'pino';
import { RefusalLimiter } from '../journal/refusal-limits.js';
import type { Metrics } from './metrics.js';

/** The log says so once per limit in this long, then how many more there were. */
export const LIMIT_LOG_MS = 10_000;

/**
 * Which limit a refusal met: a `limits.*` key, `RLIMIT_NOFILE` (the process's open files,
 * `ulimit -n`: EMFILE) or `ENFILE` (the system's).
 */
export type Limit =
  | 'limits.maxConnections'
  | 'limits.maxTunnels'
  | 'limits.tunnelsPerSession'
  | 'RLIMIT_NOFILE'
  | 'ENFILE';

/**
 * Refusals at a limit, as operators see them: each counted in
 * `trajgate_limit_refusals_total{limit}`, and logged. A flood would be a line per connection,
 * so the first for a limit is logged at once and the rest in LIMIT_LOG_MS are counted into
 * one line when it ends (or at shutdown), through the limiter that bounds refusal records.
 */
export class LimitLog {
  readonly #limiter: RefusalLimiter<string>;

  constructor(
    private readonly log: Logger,
    private readonly metrics: Metrics,
  ) {
    this.#limiter = new RefusalLimiter<string>(
      (limit, suppressed, last) =>
        log.warn(
          { limit, suppressed },
          `${suppressed} more refused at ${limit} within ${LIMIT_LOG_MS / 1000} s; the last: ${last}`,
        ),
      { admit: 1, windowMs: LIMIT_LOG_MS },
    );
  }

  /** Counts and logs one refusal at `limit`; `reason` says what was refused and what to do. */
  refused(limit: Limit, reason: string): void {
    this.metrics.limitRefusals.inc({ limit });
    if (this.#limiter.admit(limit, reason))
      this.log.warn({ limit }, `refused at ${limit}: ${reason}`);
  }

  /**
   * A listener (`listen.proxy`…) could not accept a connection; Node closed it and accepts on.
   * At a file limit it is a refusal at that limit, anything else an error of its own.
   */
  acceptFailed(listener: string, err: NodeJS.ErrnoException): void {
    const lost = `${listener} could not accept a connection (${err.code}), which was closed`;
    if (err.code === 'EMFILE')
      this.refused(
        'RLIMIT_NOFILE',
        `${lost}: the process has all the files ulimit -n lets it open; raise it or lower limits.maxConnections (docs/deploy.md)`,
      );
    else if (err.code === 'ENFILE')
      this.refused('ENFILE', `${lost}: the system's file table is full (fs.file-max)`);
    else this.log.error({ err }, lost);
  }

  /** Logs the counts still waiting (at shutdown). */
  close(): void {
    this.#limiter.close();
  }
}
