import type { Logger } from 'pino';
import { upstreamTrust } from '../action/trust.js';
import type { HostPort } from '../config/formats.js';
import type { Part, Shape, Slice } from '../config/parts.js';
import { built, part } from '../config/parts.js';
import type { DecisionLinks } from './decision-links.js';
import type { Metrics } from './metrics.js';
import { Notices, pageBase } from './notices.js';
import type { NoticeKind } from './notify.js';
import { Notifier } from './notify.js';
import type { Review } from './review.js';

/** What the webhook is built from: its receiver, what it is sent, and whose CAs verify it. */
export const WEBHOOK = {
  notify: [
    'webhook',
    'on',
    'headers',
    'timeout',
    'attempts',
    'backoff',
    'connections',
    'queue',
    'pageUrl',
    'secret',
  ],
  tls: ['upstreamCa'],
} as const satisfies Shape;

export type WebhookConfig = Slice<typeof WEBHOOK>;

export interface WebhookDeps {
  readonly review: Review;
  readonly links: DecisionLinks;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** The admin listener's address, known once it listens. */
  admin(): HostPort;
}

/**
 * `notify.webhook`, when configured: pauses (and reviews, per `notify.on`) are sent with their
 * chat line, page URL and decision links. A reload that changes its slice builds a new
 * notifier for what comes next; the old one delivers what it holds, then closes.
 */
export class Webhook {
  #config: WebhookConfig;
  #notifier: Notifier | null;
  readonly #retiring = new Set<Notifier>();
  readonly #deps: WebhookDeps;

  constructor(config: WebhookConfig, deps: WebhookDeps) {
    this.#deps = deps;
    this.#config = config;
    this.#notifier = this.#build(config);
    const notices = new Notices(
      () => pageBase(this.#config.notify.pageUrl, deps.admin()),
      deps.links,
      (id, seq) => deps.review.earlier(id, seq),
    );
    deps.review.onPause((r) => this.#send('pause', r.session, () => notices.pause(r)));
    deps.review.onReview((e) => this.#send('review', e.session, () => notices.review(e)));
  }

  /** Its part of the gateway's config (gateway/config-parts.ts). */
  part(): Part {
    return part({
      name: 'webhook',
      reads: WEBHOOK,
      configure: (next) =>
        built(
          // The receiver's CAs are read now: one that cannot be read refuses the reload.
          () => this.#build(next),
          (notifier) => {
            const old = this.#notifier;
            if (old !== null) {
              this.#retiring.add(old);
              void old.retire().finally(() => this.#retiring.delete(old));
            }
            this.#notifier = notifier;
            this.#config = next;
          },
          (notifier) => void notifier?.close(),
        ),
    });
  }

  /** Abandons what is queued or under way, and closes the connections. */
  async close(): Promise<void> {
    await Promise.all([this.#notifier, ...this.#retiring].map((n) => n?.close()));
  }

  #send(kind: NoticeKind, session: string, payload: () => object): void {
    if (this.#notifier !== null && this.#config.notify.on.includes(kind))
      this.#notifier.send(kind, session, payload());
  }

  #build(config: WebhookConfig): Notifier | null {
    const { webhook } = config.notify;
    if (webhook === undefined) return null;
    const { metrics } = this.#deps;
    return new Notifier(
      { ...config.notify, webhook },
      this.#deps.log,
      {
        failed: () => metrics.webhookFailures.inc(),
        dropped: () => metrics.webhookDropped.inc(),
        queued: (n) => metrics.webhookQueued.set(n),
      },
      upstreamTrust(config.tls.upstreamCa)(),
    );
  }
}
