import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Metric } from 'prom-client';

/** What the gauges read when scraped. */
export interface GaugeReads {
  held(): number;
  paused(): number;
  sessions(): number;
}

const NONE: GaugeReads = { held: () => 0, paused: () => 0, sessions: () => 0 };

interface EventCount {
  readonly labels: { source: string; kind: string; verdict: string };
  n: number;
}

/**
 * Prometheus metrics on the admin listener's `/metrics`. Counters count from process start;
 * gauges are read when scraped.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly upstreamErrors: Counter<'status'>;
  readonly webhookFailures: Counter;
  readonly journalFailures: Counter;
  readonly limitRefusals: Counter<'limit'>;
  readonly webhookDropped: Counter;
  readonly sessionsEvicted: Counter;
  readonly webhookQueued: Gauge;
  readonly journalWrite: WriteTimes;
  readonly #storeTimes: WriteTimes;
  readonly #storeErrors: Counter<'op'>;
  readonly #storeUp: Gauge;
  /** Counted here per event, handed to prom-client when scraped (its inc hashes labels). */
  readonly #eventCounts = new Map<string, EventCount>();
  #reads: GaugeReads;

  /** `reads`: where the gauges read from; the gateway's parts name it later (gauges()). */
  constructor(reads: GaugeReads = NONE) {
    this.#reads = reads;
    const read = (): GaugeReads => this.#reads;
    const registers = [this.registry];
    const counts = this.#eventCounts;
    new Counter({
      name: 'trajgate_events_total',
      help: 'Trajectory events judged, by source, kind and verdict',
      labelNames: ['source', 'kind', 'verdict'],
      registers,
      collect() {
        this.reset();
        for (const c of counts.values()) this.inc(c.labels, c.n);
      },
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
    this.webhookDropped = new Counter({
      name: 'trajgate_webhook_dropped_total',
      help: 'Notifications dropped unsent because notify.queue was full (the oldest go first)',
      registers,
    });
    this.webhookQueued = new Gauge({
      name: 'trajgate_webhook_queued',
      help: 'Notifications waiting for a connection to the webhook',
      registers,
    });
    this.journalFailures = new Counter({
      name: 'trajgate_journal_failures_total',
      help: 'Journal writes that failed (each refused what it would have recorded with 503)',
      registers,
    });
    this.limitRefusals = new Counter({
      name: 'trajgate_limit_refusals_total',
      help: 'Connections and tunnels refused at a limit, by limit (a limits.* key, or RLIMIT_NOFILE / ENFILE when accept failed)',
      labelNames: ['limit'],
      registers,
    });
    this.journalWrite = new WriteTimes(
      'trajgate_journal_write_seconds',
      'Time of each synchronous journal write',
      [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05],
    );
    this.registry.registerMetric(this.journalWrite as unknown as Metric);
    // The shared state store (state.store: redis); with memory, no op series and up stays 1.
    this.#storeTimes = new WriteTimes(
      'trajgate_store_seconds',
      'Time of each shared state store operation (refresh, claim, write, publish, ...), by op',
      [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1],
      'op',
    );
    this.registry.registerMetric(this.#storeTimes as unknown as Metric);
    this.#storeErrors = new Counter({
      name: 'trajgate_store_errors_total',
      help: 'Shared state store operations that failed (unreachable, timed out or an error answer), by op',
      labelNames: ['op'],
      registers,
    });
    this.#storeUp = new Gauge({
      name: 'trajgate_store_up',
      help: 'Whether the shared state store answers: 0 while it is down and decisions fail closed',
      registers,
    });
    this.#storeUp.set(1);
    new Gauge({
      name: 'trajgate_held_requests',
      help: 'Requests held open because their session is paused',
      registers,
      collect() {
        this.set(read().held());
      },
    });
    new Gauge({
      name: 'trajgate_sessions',
      help: 'Sessions remembered (idle ones with nothing left to remember are evicted)',
      registers,
      collect() {
        this.set(read().sessions());
      },
    });
    this.sessionsEvicted = new Counter({
      name: 'trajgate_sessions_evicted_total',
      help: 'Sessions forgotten after policy.sessionIdle with nothing left to remember',
      registers,
    });
    new Gauge({
      name: 'trajgate_paused_sessions',
      help: 'Sessions currently paused',
      registers,
      collect() {
        this.set(read().paused());
      },
    });
  }

  /** Reads the gauges from these parts from now on (they open after the metrics do). */
  gauges(reads: Partial<GaugeReads>): void {
    this.#reads = { ...this.#reads, ...reads };
  }

  /** Counts a judged event. */
  event(source: string, kind: string, verdict: string): void {
    const key = `${source}\0${kind}\0${verdict}`;
    const count = this.#eventCounts.get(key);
    if (count !== undefined) count.n++;
    else this.#eventCounts.set(key, { labels: { source, kind, verdict }, n: 1 });
  }

  /** Times one shared state store operation (`op`: refresh, claim, write, publish, ...). */
  storeOp(op: string, seconds: number): void {
    this.#storeTimes.observe(seconds, op);
  }

  /** Counts a failed shared state store operation. */
  storeError(op: string): void {
    this.#storeErrors.inc({ op });
  }

  /** Whether the shared state store answers (set on each change; starts at 1). */
  storeUp(up: boolean): void {
    this.#storeUp.set(up ? 1 : 0);
  }

  /** This gateway's metrics, then the process's (one set per process: see processMetrics). */
  async text(): Promise<string> {
    const [own, node] = await Promise.all([this.registry.metrics(), processMetrics().metrics()]);
    return `${own}\n${node}`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

let processRegistry: Registry | undefined;

/**
 * Node's process and heap metrics (prom-client's default collectors). They describe the
 * process, not a gateway, and each collectDefaultMetrics call starts an event-loop monitor and
 * a GC observer that nothing stops: so one set per process, whatever number of gateways it runs
 * (tests run many), beside each gateway's own registry.
 */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

interface Series {
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * A histogram observed once per journal write or store operation. prom-client's own hashes a
 * label set on every observation; this one has at most one label, finds its series in a Map,
 * adds to its bucket, and renders in prom-client's format when scraped (buckets cumulative,
 * then _sum and _count). Without a label its one series renders from the start; with one, a
 * series appears at its first observation.
 */
export class WriteTimes {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    private readonly label?: string,
  ) {
    if (label === undefined) this.#add('');
  }

  observe(seconds: number, value = ''): void {
    const s = this.#series.get(value) ?? this.#add(value);
    s.sum += seconds;
    s.count++;
    const i = this.buckets.findIndex((le) => seconds <= le);
    if (i >= 0) s.counts[i]!++;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: object[] } {
    const values: object[] = [];
    for (const [value, s] of this.#series) {
      const own = this.label === undefined ? {} : { [this.label]: value };
      let cumulative = 0;
      for (const [i, le] of this.buckets.entries()) {
        cumulative += s.counts[i]!;
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { le, ...own },
          value: cumulative,
        });
      }
      values.push(
        { metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...own }, value: s.count },
        { metricName: `${this.name}_sum`, labels: own, value: s.sum },
        { metricName: `${this.name}_count`, labels: own, value: s.count },
      );
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }

  #add(value: string): Series {
    const s: Series = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
    this.#series.set(value, s);
    return s;
  }
}
