import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { Config } from '../config/load.js';

const ATTEMPTS = 3;
const TIMEOUT_MS = 5_000;
const BACKOFF_MS = 500;

/**
 * Posts pause records (and, if asked, reviews) to `notify.webhook`. Fire and forget: a webhook
 * that is slow or down is retried with backoff, logged and counted, and never delays or fails
 * a request of the agent.
 */
export class Notifier {
  readonly #url: string;
  readonly #headers: Record<string, string>;
  readonly #log: Logger;
  readonly #failed: () => void;
  readonly #agent = new Agent({
    headersTimeout: TIMEOUT_MS,
    bodyTimeout: TIMEOUT_MS,
    connect: { timeout: TIMEOUT_MS },
  });
  readonly #pending = new Set<Promise<void>>();

  constructor(config: Config['notify'] & { webhook: string }, log: Logger, failed: () => void) {
    this.#url = config.webhook;
    this.#headers = { ...config.headers, 'content-type': 'application/json' };
    this.#log = log;
    this.#failed = failed;
  }

  send(kind: 'pause' | 'review', payload: object): void {
    const body = JSON.stringify({ kind, ...payload });
    const delivery = this.#deliver(kind, body).finally(() => this.#pending.delete(delivery));
    this.#pending.add(delivery);
  }

  /** Waits for deliveries under way (at shutdown), then closes the connection pool. */
  async close(): Promise<void> {
    await Promise.allSettled(this.#pending);
    await this.#agent.close();
  }

  async #deliver(kind: string, body: string): Promise<void> {
    let why = '';
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      try {
        const res = await request(this.#url, {
          method: 'POST',
          headers: this.#headers,
          body,
          dispatcher: this.#agent,
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        await res.body.dump();
        if (res.statusCode < 300) return;
        why = `status ${res.statusCode}`;
      } catch (err) {
        why = (err as Error).message;
      }
      if (attempt < ATTEMPTS) await sleep(BACKOFF_MS * 2 ** (attempt - 1));
    }
    this.#failed();
    this.#log.warn(`notify: ${kind} webhook failed after ${ATTEMPTS} attempts (${why})`);
  }
}
