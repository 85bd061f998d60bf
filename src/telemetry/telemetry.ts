import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';
import type { Part } from '../config/parts.js';
import { part } from '../config/parts.js';
import type { Otlp } from '../config/telemetry-schema.js';
import type { Written } from '../journal/writer.js';
import type { ExportCounts, Signal } from './otlp.js';
import { EXPORT_TIMEOUT_MS, OtlpSink } from './otlp.js';
import type { LogSpec, Sink, SpanSpec } from './spans.js';
import { TraceBook } from './trace-book.js';

/** How long a stop or a reload waits for what is queued to be sent, at most. */
export const FLUSH_MS = 2000;
const READS = { telemetry: ['otlp'] } as const;
const WARN_EVERY_MS = 60_000;

const version = (): string =>
  (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;

/** `trajgate_otlp_*` on /metrics: what export lost, and what it sent. */
function counters(registry: Registry): ExportCounts {
  const registers = [registry];
  const labelNames = ['signal'] as const;
  // A collector down drops every record: kept as plain numbers, added to the counter when read.
  const unsaid: Record<Signal, number> = { spans: 0, logs: 0 };
  new Counter({
    name: 'trajgate_otlp_dropped_total',
    help: 'Spans and log records not exported (the queue was full, or their export failed), by signal',
    labelNames,
    registers,
    collect() {
      for (const signal of ['spans', 'logs'] as const) {
        if (unsaid[signal] > 0) this.inc({ signal }, unsaid[signal]);
        unsaid[signal] = 0;
      }
    },
  });
  const failures = new Counter({
    name: 'trajgate_otlp_export_failures_total',
    help: 'OTLP exports that failed (collector down, slow past the timeout, or an error answer), by signal',
    labelNames,
    registers,
  });
  const exported = new Counter({
    name: 'trajgate_otlp_exported_total',
    help: 'Spans and log records the collector accepted, by signal',
    labelNames,
    registers,
  });
  return {
    dropped: (signal: Signal, n: number) => void (unsaid[signal] += n),
    failed: (signal: Signal) => failures.inc({ signal }),
    exported: (signal: Signal, n: number) => exported.inc({ signal }, n),
  };
}

/**
 * OpenTelemetry export of the journal (`telemetry.otlp`, docs/telemetry.md): fed every record
 * as written, it never throws into the journal and never waits; off, it does nothing. A reload
 * may turn it on or off or change the collector: the old one gets what it queued (bounded by
 * FLUSH_MS), requests still open end in the new one.
 */
export class Telemetry implements Sink {
  readonly #log: Logger;
  readonly #counts: ExportCounts;
  readonly #book: TraceBook;
  readonly #version = version();
  #sink: OtlpSink | null = null;
  #pending: Written[] = [];
  #endpoint = '';
  /** Failed exports since the last warning, and when it was (one line a minute at most). */
  #failures = 0;
  #warnedAt = -Infinity;

  constructor(otlp: Otlp | undefined, registry: Registry, log: Logger, now = Date.now) {
    this.#log = log;
    const counted = counters(registry);
    this.#counts = { ...counted, failed: (signal) => this.#failed(signal, counted) };
    this.#book = new TraceBook(new Date(now()).toISOString(), this);
    this.#open(otlp);
  }

  /**
   * The journal's onWritten: kept for the next turn of the event loop, so that building spans
   * happens after the decision is answered, never inside it.
   */
  readonly written = (w: Written): void => {
    if (this.#sink === null) return;
    if (this.#sink.droppedUnread(w.record)) {
      if (this.#book.release(w.record)) this.#counts.dropped('spans', 1);
      return;
    }
    this.#pending.push(w);
    if (this.#pending.length === 1) setImmediate(this.#drain);
  };

  /** Errors are the export's own, never the decision's. */
  readonly #drain = (): void => {
    const pending = this.#pending;
    this.#pending = [];
    for (const w of pending) {
      try {
        this.#book.written(w);
      } catch (err) {
        this.#log.warn({ err }, 'telemetry: a record could not be exported');
      }
    }
  };

  span(span: SpanSpec): void {
    this.#sink?.span(span);
  }

  log(log: LogSpec): void {
    this.#sink?.log(log);
  }

  /** The config part: telemetry.otlp takes effect on reload. */
  part(): Part {
    return part({
      name: 'telemetry',
      reads: READS,
      configure: (next) => ({ install: () => void this.#replace(next.telemetry.otlp) }),
    });
  }

  async close(): Promise<void> {
    this.#drain();
    this.#book.flushOpen(Date.now());
    const sink = this.#sink;
    this.#sink = null;
    await sink?.close(FLUSH_MS);
  }

  #open(otlp: Otlp | undefined): void {
    this.#sink = otlp === undefined ? null : new OtlpSink(otlp, this.#version, this.#counts);
    this.#endpoint = otlp?.endpoint ?? '';
    // The endpoint is no secret (schema: no credentials in it); the headers are never logged.
    if (otlp !== undefined) this.#log.info(`telemetry: exporting to ${otlp.endpoint} (OTLP/HTTP)`);
  }

  /** Counted, and said in the log at most once a minute: a collector down is no log flood. */
  #failed(signal: Signal, counted: ExportCounts): void {
    counted.failed(signal);
    this.#failures++;
    const now = Date.now();
    if (now - this.#warnedAt < WARN_EVERY_MS) return;
    this.#log.warn(
      `telemetry: ${this.#failures} export(s) to ${this.#endpoint} failed (refused, no answer ` +
        `within ${EXPORT_TIMEOUT_MS / 1000} s, or an error status); what they held is dropped ` +
        '(trajgate_otlp_dropped_total)',
    );
    this.#failures = 0;
    this.#warnedAt = now;
  }

  async #replace(otlp: Otlp | undefined): Promise<void> {
    const old = this.#sink;
    // What was written before the reload goes where it was headed.
    this.#drain();
    if (otlp === undefined) this.#book.flushOpen(Date.now());
    this.#book.forgetSessions();
    this.#open(otlp);
    if (otlp === undefined && old !== null) this.#log.info('telemetry: export off');
    await old?.close(FLUSH_MS);
  }
}
