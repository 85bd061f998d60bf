import type { Logger } from 'pino';
import type { HealthView } from '../wire.js';

/** A failing journal is logged at most this often, with the count since the last line. */
const LOG_EVERY_MS = 1_000;

/**
 * What the journal writer reports: each failed write (the gateway then refuses with 503) and
 * the first write that succeeds after them. An outage is loud but not a flood: the first
 * failure is logged at once, then at most one line a second with the count since the last;
 * the recovery is logged once. It stays `degraded` until a write succeeds (nothing probes).
 */
export class JournalHealth {
  #failures = 0;
  #unlogged = 0;
  #outageStart: { at: number; failures: number } | null = null;
  #last: { at: number; error: string } | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly path: string,
    private readonly log: Pick<Logger, 'error' | 'info'>,
    private readonly counted: () => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  failed(error: string): void {
    this.#failures++;
    this.#unlogged++;
    this.counted();
    this.#last = { at: this.now(), error };
    this.#outageStart ??= { at: this.#last.at, failures: this.#failures - 1 };
    if (this.#timer === null) this.#report();
  }

  recovered(): void {
    if (this.#outageStart === null) return;
    const failed = this.#failures - this.#outageStart.failures;
    const ms = this.now() - this.#outageStart.at;
    this.#outageStart = null;
    this.#unlogged = 0;
    this.#stopTimer();
    this.log.info(
      { failures: failed, outageMs: ms },
      `journal: writable again after ${failed} failed write(s) over ${ms} ms; requests are served`,
    );
  }

  view(): Omit<HealthView, 'store'> {
    const iso = (ms: number) => new Date(ms).toISOString();
    const start = this.#outageStart;
    return {
      status: start === null ? 'ok' : 'degraded',
      journal: {
        path: this.path,
        writable: start === null,
        failingSince: start === null ? null : iso(start.at),
        failures: this.#failures,
        lastFailure: this.#last && { at: iso(this.#last.at), error: this.#last.error },
      },
    };
  }

  /** At stop: failures not yet logged are, now. */
  close(): void {
    this.#stopTimer();
    this.#report();
    this.#stopTimer();
  }

  /** Logs the failures since the last line, if any, and holds the next line back a second. */
  #report(): void {
    this.#timer = null;
    if (this.#unlogged === 0 || this.#last === null) return;
    this.log.error(
      { failures: this.#unlogged, total: this.#failures, error: this.#last.error },
      `journal: ${this.#unlogged} write(s) failed (${this.#last.error}); every request is refused with 503 until the journal can be written`,
    );
    this.#unlogged = 0;
    this.#timer = setTimeout(() => this.#report(), LOG_EVERY_MS).unref();
  }

  #stopTimer(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
