import type { StoreHealth, StoreMonitor } from './connect.js';

/** What ioredis rejects a command with once `commandTimeout` (state.redis.timeout) passed. */
const TIMED_OUT = 'Command timed out';

/**
 * Whether the shared store answers. A connection that stays open to a Redis that no longer
 * answers (frozen, swapping, stuck in a long command) raises no connection event: so a command
 * that times out marks the store down too, and a probe (one read) tests it while nothing else was answered
 * lately. Down within `timeout` plus one probe interval of the hang; up again at the first
 * command answered in time.
 */
export class Liveness {
  /** Why the connection is down (its events), why commands go unanswered, why decisions stop. */
  #disconnected: string | null = 'not connected yet';
  #unanswered: string | null = null;
  #emptied: string | null = null;
  /** As trajgate_store_up starts: a store not answering from the start is reported down. */
  #up = true;
  #lastAnswer = 0;
  #probing = false;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly monitor: StoreMonitor,
    /** state.redis.timeout, ms. */
    private readonly timeout: number,
  ) {}

  /** The probe's period: a fraction of the budget (the hang is seen soon after it), ≤ 1 s. */
  get every(): number {
    return Math.min(Math.max(this.timeout / 4, 50), 1_000);
  }

  /** Why the connection is down (null: connected), from its events. */
  get disconnected(): string | null {
    return this.#disconnected;
  }

  health(): StoreHealth {
    const error = this.#disconnected ?? this.#unanswered ?? this.#emptied;
    return { up: error === null, error };
  }

  connection(error: string | null): void {
    this.#disconnected = error;
    // A new connection starts answered: what the old one left unanswered is moot.
    if (error === null) this.#answered();
    this.#report();
  }

  /** Decisions stop (the store came back empty) or go on (null). */
  emptied(why: string | null): void {
    this.#emptied = why;
    this.#report();
  }

  /** A command answered (within the timeout, or it would have been rejected). */
  answered(): void {
    this.#answered();
    this.#report();
  }

  /** A command failed: one that timed out says the store hangs. */
  failed(err: unknown): void {
    if (!(err instanceof Error) || err.message !== TIMED_OUT) return;
    this.#unanswered = `no answer within ${this.timeout} ms (state.redis.timeout)`;
    this.#report();
  }

  /**
   * Runs `ping` (one store command, which reports through answered/failed) every `every` ms
   * while nothing answered for that long and the connection is up; one at a time.
   */
  probe(ping: () => Promise<unknown>): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => {
      const quiet = performance.now() - this.#lastAnswer >= this.every;
      if (this.#probing || !quiet || this.#disconnected !== null) return;
      this.#probing = true;
      ping()
        .catch(() => undefined)
        .finally(() => (this.#probing = false));
    }, this.every).unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  #answered(): void {
    this.#lastAnswer = performance.now();
    this.#unanswered = null;
  }

  /** Tells the monitor (trajgate_store_up) when the store goes down or comes back. */
  #report(): void {
    const { up } = this.health();
    if (up !== this.#up) this.monitor.storeUp(up);
    this.#up = up;
  }
}
