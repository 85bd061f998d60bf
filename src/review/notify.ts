import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { Config } from '../config/load.js';

/**
 * Posts pause records (and, if asked, reviews) to `notify.webhook`. Fire and forget: a webhook
 * that is slow or down is retried with backoff (`notify.attempts`, `notify.backoff`, each try
 * bounded by `notify.timeout`), logged and counted, and never delays or fails a request of the
 * agent. Stopping the gateway abandons deliveries still under way (counted as failed).
 */
export class Notifier {
  readonly #config: Config['notify'] & { webhook: string };
  readonly #headers: Record<string, string>;
  readonly #log: Logger;
  readonly #failed: () => void;
  readonly #agent: Agent;
  readonly #closing = new AbortController();
  readonly #pending = new Set<Promise<void>>();

  constructor(config: Config['notify'] & { webhook: string }, log: Logger, failed: () => void) {
    this.#config = config;
    this.#headers = { ...config.headers, 'content-type': 'application/json' };
    this.#log = log;
    this.#failed = failed;
    const t = config.timeout;
    this.#agent = new Agent({ headersTimeout: t, bodyTimeout: t, connect: { timeout: t } });
  }

  send(kind: 'pause' | 'review', payload: object): void {
    const body = JSON.stringify({ kind, ...payload });
    const delivery = this.#deliver(kind, body).finally(() => this.#pending.delete(delivery));
    this.#pending.add(delivery);
  }

  /** Abandons deliveries under way, then closes the connection pool. */
  async close(): Promise<void> {
    this.#closing.abort();
    await Promise.allSettled(this.#pending);
    await this.#agent.destroy();
  }

  async #deliver(kind: string, body: string): Promise<void> {
    const { attempts, backoff, timeout } = this.#config;
    let why = '';
    for (let attempt = 1; attempt <= attempts && !this.#closing.signal.aborted; attempt++) {
      try {
        const res = await request(this.#config.webhook, {
          method: 'POST',
          headers: this.#headers,
          body,
          dispatcher: this.#agent,
          signal: AbortSignal.any([this.#closing.signal, AbortSignal.timeout(timeout)]),
        });
        await res.body.dump();
        if (res.statusCode < 300) return;
        why = `status ${res.statusCode}`;
      } catch (err) {
        why = (err as Error).message;
      }
      if (attempt < attempts) {
        await sleep(backoff * 2 ** (attempt - 1), undefined, {
          signal: this.#closing.signal,
        }).catch(() => undefined);
      }
    }
    if (this.#closing.signal.aborted) why = `gateway stopping (${why || 'not sent'})`;
    this.#failed();
    this.#log.warn(`notify: ${kind} webhook failed (${why})`);
  }
}
