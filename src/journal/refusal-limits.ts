import type { Source } from '../event/event.js';

/**
 * Keeps refusal records from filling the disk. A refusal made before a request has an identity
 * (malformed, no credentials, headers too large or too slow) costs its sender nothing, so its
 * record is bounded in size (its target, like every record's: long-target.ts) and in rate
 * (PER_SECOND records a second from one client address; past that, one summary record a second
 * says how many were left out). The log bounds its lines about refused TLS handshakes the same
 * way, with a longer window (ingress/handshake-log.ts).
 */

/** Refusal records a second from one client address before they are summarised. */
export const PER_SECOND = 20;
/** Client addresses followed at once; any further ones share one window (key OTHERS). */
export const MAX_CLIENTS = 1024;
/** The summary's `client` for addresses beyond MAX_CLIENTS. */
export const OTHERS = '*';

const SECOND = 1_000;

/** A refusal left out of the journal, as its summary names the last one. */
export interface Unwritten {
  readonly source: Source;
  readonly status: number;
  readonly reason: string;
}

interface Window<T> {
  readonly start: number;
  written: number;
  suppressed: number;
  last: T | null;
}

/** How many a window admits, and how long it lasts. */
export interface Rate {
  readonly admit: number;
  readonly windowMs: number;
}

/**
 * Per key (a client address), a window from its first refusal (by default one second): the
 * first `rate.admit` (PER_SECOND) are admitted, the rest counted; when the window ends,
 * `summarise` is called once with the count and the last one left out. Memory is bounded by
 * MAX_CLIENTS windows; one timer runs only while a count waits to be written.
 */
export class RefusalLimiter<T = Unwritten> {
  readonly #windows = new Map<string, Window<T>>();
  #timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly summarise: (client: string, suppressed: number, last: T) => void,
    private readonly rate: Rate = { admit: PER_SECOND, windowMs: SECOND },
  ) {}

  /** Whether this refusal gets its own record; if not, it is counted for the summary. */
  admit(client: string, refusal: T, now: number = Date.now()): boolean {
    const key = this.#key(client, now);
    let window = this.#windows.get(key);
    if (window !== undefined && now - window.start >= this.rate.windowMs) {
      this.#end(key, window);
      window = undefined;
    }
    if (window === undefined) {
      window = { start: now, written: 0, suppressed: 0, last: null };
      this.#windows.set(key, window);
    }
    if (window.written < this.rate.admit) {
      window.written++;
      return true;
    }
    window.suppressed++;
    window.last = refusal;
    this.#timer ??= setTimeout(() => this.#sweep(Date.now()), this.rate.windowMs).unref();
    return false;
  }

  /** Writes every waiting summary now (at shutdown) and stops the timer. */
  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    for (const [key, window] of this.#windows) this.#end(key, window);
  }

  #key(client: string, now: number): string {
    if (this.#windows.size < MAX_CLIENTS || this.#windows.has(client)) return client;
    this.#sweep(now);
    return this.#windows.size < MAX_CLIENTS ? client : OTHERS;
  }

  /** Ends the windows that are over; re-arms the timer for the next waiting summary. */
  #sweep(now: number): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    let next = Infinity;
    for (const [key, window] of this.#windows) {
      const left = window.start + this.rate.windowMs - now;
      if (left <= 0) this.#end(key, window);
      else if (window.suppressed > 0) next = Math.min(next, left);
    }
    if (next !== Infinity) this.#timer = setTimeout(() => this.#sweep(Date.now()), next).unref();
  }

  #end(key: string, window: Window<T>): void {
    this.#windows.delete(key);
    if (window.last !== null) this.summarise(key, window.suppressed, window.last);
  }
}
