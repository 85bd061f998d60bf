import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Prometheus metrics on the admin listener's `/metrics`. Counters count from process start;
 * gauges are read when scraped.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly events: Counter<'source' | 'kind' | 'verdict'>;
  readonly upstreamErrors: Counter<'status'>;
  readonly webhookFailures: Counter;
  readonly journalWrite: Histogram;
  readonly #eventChildren = new Map<string, { inc(): void }>();

  constructor(read: { held: () => number; paused: () => number }) {
    const registers = [this.registry];
    this.events = new Counter({
      name: 'trajgate_events_total',
      help: 'Trajectory events judged, by source, kind and verdict',
      labelNames: ['source', 'kind', 'verdict'],
      registers,
    });
    this.upstreamErrors = new Counter({
      name: 'trajgate_upstream_errors_total',
      help: 'Requests that failed upstream (502, 504)',
      labelNames: ['status'],
      registers,
    });
    this.webhookFailures = new Counter({
      name: 'trajgate_webhook_failures_total',
      help: 'Notifications that could not be delivered after all retries',
      registers,
    });
    this.journalWrite = new Histogram({
      name: 'trajgate_journal_write_seconds',
      help: 'Time of each synchronous journal write',
      buckets: [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05],
      registers,
    });
    new Gauge({
      name: 'trajgate_held_requests',
      help: 'Requests held open because their session is paused',
      registers,
      collect() {
        this.set(read.held());
      },
    });
    new Gauge({
      name: 'trajgate_paused_sessions',
      help: 'Sessions currently paused',
      registers,
      collect() {
        this.set(read.paused());
      },
    });
  }

  /** Counts a judged event; label children are cached, so a request builds no label key. */
  event(source: string, kind: string, verdict: string): void {
    const key = `${source} ${kind} ${verdict}`;
    let child = this.#eventChildren.get(key);
    if (child === undefined) {
      child = this.events.labels(source, kind, verdict);
      this.#eventChildren.set(key, child);
    }
    child.inc();
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
