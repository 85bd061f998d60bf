import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Pool } from 'undici';
import { undici } from '../undici.js';
import type { Config } from '../config/load.js';

/** What a notifier is built from (its receiver's trust apart). */
export type NotifierConfig = Pick<
  Config['notify'],
  'headers' | 'timeout' | 'attempts' | 'backoff' | 'connections' | 'queue' | 'secret'
> & { readonly webhook: string };

export type NoticeKind = 'pause' | 'review';

/** One notification waiting to be delivered: the latest payload of its session and kind. */
export interface Notice {
  readonly key: string;
  readonly kind: NoticeKind;
  /** The payload as JSON, serialised when it was sent (later changes to it are not seen). */
  json: string;
  /** How many earlier notifications of this session and kind it stands for. */
  coalesced: number;
}

/**
 * The notifications waiting for a free connection, oldest first, at most `bound` of them.
 * A notification of a session and kind that is already waiting replaces its payload in place
 * (a burst costs one entry and one delivery); past the bound the oldest is dropped, so a
 * receiver that hangs costs at most `bound` payloads.
 */
export class NoticeQueue {
  readonly #waiting = new Map<string, Notice>();

  constructor(readonly bound: number) {}

  get size(): number {
    return this.#waiting.size;
  }

  /** Queues (or coalesces) a notification; returns the one dropped to make room, if any. */
  push(kind: NoticeKind, session: string, json: string): Notice | undefined {
    const key = `${kind}\0${session}`;
    const same = this.#waiting.get(key);
    if (same) {
      same.json = json;
      same.coalesced++;
      return undefined;
    }
    let dropped: Notice | undefined;
    if (this.#waiting.size >= this.bound) {
      dropped = this.#waiting.values().next().value as Notice;
      this.#waiting.delete(dropped.key);
    }
    this.#waiting.set(key, { key, kind, json, coalesced: 0 });
    return dropped;
  }

  /**
   * Removes and returns the oldest notification whose key is not `busy` (one delivery per
   * session and kind at a time keeps their order). Skips at most one entry per busy key.
   */
  take(busy: (key: string) => boolean): Notice | undefined {
    for (const notice of this.#waiting.values()) {
      if (busy(notice.key)) continue;
      this.#waiting.delete(notice.key);
      return notice;
    }
    return undefined;
  }

  /**
   * A delivery about to retry gives way when a newer notification of its key is waiting: that
   * one carries the latest and now also stands for this one. Returns whether it gave way.
   */
  supersede(notice: Notice): boolean {
    const newer = this.#waiting.get(notice.key);
    if (!newer) return false;
    newer.coalesced += 1 + notice.coalesced;
    return true;
  }

  /** Empties the queue; returns how many it held. */
  clear(): number {
    const n = this.#waiting.size;
    this.#waiting.clear();
    return n;
  }
}

/**
 * The signature headers of one delivery with `notify.secret`: the unix time, and
 * `sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">` (the timestamp signed with the body lets
 * a receiver refuse a replayed delivery; docs/notifications.md § Signed webhooks).
 */
export function signatureHeaders(
  secret: string,
  body: string,
  now = Date.now(),
): Record<string, string> {
  const timestamp = String(Math.floor(now / 1000));
  const mac = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return { 'x-trajgate-timestamp': timestamp, 'x-trajgate-signature': `sha256=${mac}` };
}

/** What the notifier reports to metrics. */
export interface NotifyCounts {
  failed(): void;
  dropped(): void;
  queued(n: number): void;
}

/**
 * Posts pause records (and, if asked, reviews) to `notify.webhook`. Fire and forget: a webhook
 * that is slow or down is retried with backoff (`notify.attempts`, `notify.backoff`, each try
 * bounded by `notify.timeout`), logged and counted, and never delays or fails a request of the
 * agent. Bounded whatever the receiver does: at most `notify.connections` deliveries (and so
 * sockets) at a time, at most `notify.queue` waiting (the oldest dropped, counted, logged at
 * most once a second), a burst of one session and kind coalesced into one delivery of the
 * latest. With `notify.secret` each attempt is signed (signatureHeaders). Stopping the
 * gateway abandons the queue and deliveries under way.
 */
export class Notifier {
  readonly #config: NotifierConfig;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  readonly #log: Logger;
  readonly #counts: NotifyCounts;
  readonly #pool: Pool;
  readonly #queue: NoticeQueue;
  /** Deliveries under way (trying or waiting to retry), by key. */
  readonly #active = new Map<string, Promise<void>>();
  readonly #closing = new AbortController();
  #unloggedDrops = 0;
  #dropLog: NodeJS.Timeout | undefined;

  /** `trust`: the CAs an https receiver's certificate is verified against (see upstreamTrust). */
  constructor(config: NotifierConfig, log: Logger, counts: NotifyCounts, trust: readonly string[]) {
    this.#config = config;
    const url = new URL(config.webhook);
    this.#path = url.pathname + url.search;
    this.#headers = { ...config.headers, 'content-type': 'application/json' };
    this.#log = log;
    this.#counts = counts;
    this.#queue = new NoticeQueue(config.queue);
    const t = config.timeout;
    this.#pool = new (undici().Pool)(url.origin, {
      connections: config.connections,
      headersTimeout: t,
      bodyTimeout: t,
      connect: { timeout: t, ca: [...trust] },
    });
  }

  send(kind: NoticeKind, session: string, payload: object): void {
    if (this.#closing.signal.aborted) return;
    if (this.#queue.push(kind, session, JSON.stringify(payload))) this.#dropped();
    this.#pump();
  }

  /** Abandons the queue and deliveries under way, then closes the connections. */
  async close(): Promise<void> {
    this.#closing.abort();
    const abandoned = this.#queue.clear();
    this.#counts.queued(0);
    if (abandoned > 0)
      this.#log.warn(`notify: stopping, ${abandoned} queued notification(s) not sent`);
    clearTimeout(this.#dropLog);
    this.#logDrops();
    await Promise.allSettled(this.#active.values());
    await this.#pool.destroy();
  }

  /**
   * Delivers what it holds (queued or under way), then closes its connections: a reload's new
   * notifier takes what comes next. A close meanwhile (the gateway stopping) abandons the rest.
   */
  async retire(): Promise<void> {
    while (this.#active.size > 0) await Promise.allSettled([...this.#active.values()]);
    if (!this.#closing.signal.aborted) await this.#pool.close();
  }

  /** Starts deliveries while there are free connections and notifications to send. */
  #pump(): void {
    while (this.#active.size < this.#config.connections) {
      const notice = this.#queue.take((key) => this.#active.has(key));
      if (!notice) break;
      const delivery = this.#deliver(notice).finally(() => {
        this.#active.delete(notice.key);
        this.#pump();
      });
      this.#active.set(notice.key, delivery);
    }
    this.#counts.queued(this.#queue.size);
  }

  async #deliver(notice: Notice): Promise<void> {
    const { attempts, backoff } = this.#config;
    // The payload's own fields follow kind and coalesced (it is a non-empty JSON object).
    const body = `{"kind":"${notice.kind}","coalesced":${notice.coalesced},${notice.json.slice(1)}`;
    let why = '';
    for (let attempt = 1; attempt <= attempts && !this.#closing.signal.aborted; attempt++) {
      try {
        const status = await this.#post(body);
        if (status < 300) return;
        why = `status ${status}`;
      } catch (err) {
        why = (err as Error).message;
      }
      if (attempt < attempts) {
        await sleep(backoff * 2 ** (attempt - 1), undefined, {
          signal: this.#closing.signal,
        }).catch(() => undefined);
        // A newer notification of this session and kind is waiting: it replaces this retry.
        if (this.#queue.supersede(notice)) return;
      }
    }
    if (this.#closing.signal.aborted) why = `gateway stopping (${why || 'not sent'})`;
    this.#counts.failed();
    this.#log.warn(`notify: ${notice.kind} webhook failed (${why})`);
  }

  /** One attempt, bounded by notify.timeout; its timer and listener go with it. */
  async #post(body: string): Promise<number> {
    const attempt = new AbortController();
    const abort = () => attempt.abort(new Error('gateway stopping'));
    const closing = this.#closing.signal;
    const { secret } = this.#config;
    closing.addEventListener('abort', abort, { once: true });
    const timer = setTimeout(
      () => attempt.abort(new Error(`no answer within ${this.#config.timeout} ms`)),
      this.#config.timeout,
    );
    try {
      const res = await this.#pool.request({
        path: this.#path,
        method: 'POST',
        // Signed per attempt: a retry carries its own time.
        headers:
          secret === undefined
            ? this.#headers
            : { ...this.#headers, ...signatureHeaders(secret, body) },
        body,
        signal: attempt.signal,
      });
      await res.body.dump();
      return res.statusCode;
    } finally {
      clearTimeout(timer);
      closing.removeEventListener('abort', abort);
    }
  }

  #dropped(): void {
    this.#counts.dropped();
    this.#unloggedDrops++;
    if (this.#dropLog === undefined) this.#logDrops();
  }

  /** Logs the drops since the last line, then at most once a second while drops go on. */
  #logDrops = (): void => {
    if (this.#unloggedDrops === 0) {
      this.#dropLog = undefined;
      return;
    }
    this.#log.warn(
      `notify: queue full (notify.queue: ${this.#queue.bound}), dropped the ${this.#unloggedDrops} oldest pending notification(s)`,
    );
    this.#unloggedDrops = 0;
    this.#dropLog = this.#closing.signal.aborted
      ? undefined
      : setTimeout(this.#logDrops, 1_000).unref();
  };
}
