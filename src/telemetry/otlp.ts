import type * as Api from '@opentelemetry/api';
import type * as Transformer from '@opentelemetry/otlp-transformer';
import type * as Resources from '@opentelemetry/resources';
import type * as Logs from '@opentelemetry/sdk-logs';
import type { LogRecordExporter } from '@opentelemetry/sdk-logs';
import type * as Traces from '@opentelemetry/sdk-trace-base';
import type { Span, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { lazy } from '../lazy.js';
import type { Otlp } from '../config/telemetry-schema.js';
import type { Written } from '../journal/writer.js';
import type { ExportResult } from './otlp-post.js';
import { OtlpPost } from './otlp-post.js';
import type { LogSpec, SpanSpec, Sink } from './spans.js';

/** What the export is bounded by: items waiting per signal, and how long one export may take. */
export const QUEUE = 2048;
/** Smaller batches block the event loop less while they are serialised. */
const BATCH = 256;
const DELAY_MS = 1000;
export const EXPORT_TIMEOUT_MS = 10_000;
/** Attribute values past this many characters are cut (the journal bounds targets at 512 bytes). */
const VALUE_CHARS = 1024;
const SCOPE = 'trajgate';
/** OpenTelemetry semantic conventions (stable): service.name, service.version. */
const SERVICE_NAME = 'service.name';
const SERVICE_VERSION = 'service.version';

/**
 * The SDK, loaded when an export is first configured: a gateway without `telemetry.otlp`
 * neither opens its hundreds of module files (a start under a tight open-files limit) nor
 * carries its heap.
 */
const sdk = {
  api: lazy<typeof Api>('@opentelemetry/api'),
  transformer: lazy<typeof Transformer>('@opentelemetry/otlp-transformer'),
  resources: lazy<typeof Resources>('@opentelemetry/resources'),
  logs: lazy<typeof Logs>('@opentelemetry/sdk-logs'),
  traces: lazy<typeof Traces>('@opentelemetry/sdk-trace-base'),
};
const INFO = 9;
const WARN = 13;

/** Told of what is lost and what is sent, per signal (`trajgate_otlp_*` on /metrics). */
export interface ExportCounts {
  dropped(signal: Signal, n: number): void;
  failed(signal: Signal): void;
  exported(signal: Signal, n: number): void;
}

export type Signal = 'spans' | 'logs';

/** After a failed export nothing is built for this long, doubling up to the max; a success resets it. */
const BACKOFF_MS = 1000;
const BACKOFF_MAX_MS = 60_000;

/**
 * The collector, as the last export found it: after a failed export it is taken as down for a
 * backoff (1 s doubling to 60 s, a success resets it), for both signals, since they go to the
 * same collector. A flag an unref'd timer clears: reading it costs no clock per record.
 */
class Backoff {
  down = false;
  #ms = 0;
  #timer: NodeJS.Timeout | undefined;

  ok(): void {
    this.#ms = 0;
    this.#up();
  }

  failed(): void {
    this.#ms = Math.min(BACKOFF_MAX_MS, this.#ms === 0 ? BACKOFF_MS : this.#ms * 2);
    this.#up();
    this.down = true;
    this.#timer = setTimeout(() => this.#up(), this.#ms).unref();
  }

  #up(): void {
    clearTimeout(this.#timer);
    this.down = false;
  }
}

/**
 * Keeps at most QUEUE items between the journal and a finished export: one more is dropped and
 * counted here, before it is built and before the SDK's own queue (as large) could drop it
 * uncounted. A failed export drops its batch, counted too, and while the collector is taken as
 * down (Backoff) what comes next is dropped the same way: a collector down costs one export
 * attempt per backoff, not the building of every span. Nothing here waits: the SDK's batch
 * processor sends on a timer.
 */
class Bounded {
  #queued = 0;
  constructor(
    readonly signal: Signal,
    readonly counts: ExportCounts,
    readonly collector: Backoff,
  ) {}

  get full(): boolean {
    return this.collector.down || this.#queued >= QUEUE;
  }

  admit(): boolean {
    if (this.full) {
      this.counts.dropped(this.signal, 1);
      return false;
    }
    this.#queued++;
    return true;
  }

  /** Wraps the exporter's callback: the batch leaves the queue, sent or lost. */
  done(n: number, ok: boolean): void {
    this.#queued = Math.max(0, this.#queued - n);
    if (ok) {
      this.collector.ok();
      this.counts.exported(this.signal, n);
      return;
    }
    this.collector.failed();
    this.counts.failed(this.signal);
    this.counts.dropped(this.signal, n);
  }
}

/** The exporter, telling `bound` how each batch went (0: success, per ExportResultCode). */
function counted<T>(post: OtlpPost<T>, bound: Bounded) {
  return {
    export: (items: T[], done: (result: ExportResult) => void) =>
      post.export(items, (result) => {
        bound.done(items.length, result.code === 0);
        done(result);
      }),
    shutdown: () => post.shutdown(),
    forceFlush: () => post.forceFlush(),
  };
}

/**
 * The OpenTelemetry SDK sending to one collector over OTLP/HTTP (JSON): spans to
 * `ENDPOINT/v1/traces`, log records to `ENDPOINT/v1/logs`, each through a bounded batch
 * processor. Spans get the ids the trace book derived (its `next` ids, read by the id
 * generator while the span starts: synchronously, so nothing else starts one meanwhile).
 */
export class OtlpSink implements Sink {
  readonly #tracer;
  readonly #logger;
  readonly #api = sdk.api();
  readonly #traces: Traces.BasicTracerProvider;
  readonly #logs: Logs.LoggerProvider;
  readonly #spanBound: Bounded;
  readonly #logBound: Bounded;
  readonly #posts: OtlpPost<unknown>[];
  #next = { traceId: '', spanId: '' };

  constructor(otlp: Otlp, version: string, counts: ExportCounts) {
    const { JsonLogsSerializer, JsonTraceSerializer } = sdk.transformer();
    const { BatchLogRecordProcessor, LoggerProvider } = sdk.logs();
    const { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor } = sdk.traces();
    const resource = sdk.resources().resourceFromAttributes({
      [SERVICE_NAME]: 'trajgate',
      [SERVICE_VERSION]: version,
    });
    const batch = {
      maxQueueSize: QUEUE,
      maxExportBatchSize: BATCH,
      scheduledDelayMillis: DELAY_MS,
      // Past the POST's own timeout, so that the POST's failure is what counts the batch.
      exportTimeoutMillis: EXPORT_TIMEOUT_MS + DELAY_MS,
    };
    const collector = new Backoff();
    const spans = new Bounded('spans', counts, collector);
    const spanPost = new OtlpPost<Traces.ReadableSpan>(
      `${otlp.endpoint}/v1/traces`,
      otlp.headers,
      (items) => JsonTraceSerializer.serializeRequest(items),
      EXPORT_TIMEOUT_MS,
    );
    const spanBatch = new BatchSpanProcessor(counted(spanPost, spans) as SpanExporter, batch);
    this.#traces = new BasicTracerProvider({
      resource,
      sampler: new AlwaysOnSampler(),
      spanLimits: { attributeValueLengthLimit: VALUE_CHARS },
      idGenerator: {
        generateTraceId: () => this.#next.traceId,
        generateSpanId: () => this.#next.spanId,
      },
      spanProcessors: [spanBatch],
    });
    const logs = new Bounded('logs', counts, collector);
    const logPost = new OtlpPost<Logs.ReadableLogRecord>(
      `${otlp.endpoint}/v1/logs`,
      otlp.headers,
      (items) => JsonLogsSerializer.serializeRequest(items),
      EXPORT_TIMEOUT_MS,
    );
    const logBatch = new BatchLogRecordProcessor({
      exporter: counted(logPost, logs) as LogRecordExporter,
      ...batch,
    });
    this.#logs = new LoggerProvider({ resource, processors: [logBatch] });
    this.#spanBound = spans;
    this.#logBound = logs;
    this.#posts = [spanPost, logPost] as OtlpPost<unknown>[];
    this.#tracer = this.#traces.getTracer(SCOPE, version);
    this.#logger = this.#logs.getLogger(SCOPE, version);
  }

  /**
   * Both queues are full (a collector down or slow): the record is dropped unread, its log
   * record and the span a first event would open counted, so that a dead collector costs no
   * work at all. Its outcome then finds no open span: nothing more is lost. (The outcome of a
   * span opened before the queues filled releases it: telemetry.ts.)
   */
  droppedUnread(record: Written['record']): boolean {
    if (!this.#spanBound.full || !this.#logBound.full) return false;
    this.#logBound.counts.dropped('logs', 1);
    if (record.type === 'event' && record.rid === undefined)
      this.#spanBound.counts.dropped('spans', 1);
    return true;
  }

  span(s: SpanSpec): void {
    if (!this.#spanBound.admit()) return;
    this.#next = { traceId: s.traceId, spanId: s.spanId };
    const parent =
      s.parentId === undefined
        ? this.#api.ROOT_CONTEXT
        : this.#api.trace.setSpanContext(this.#api.ROOT_CONTEXT, {
            traceId: s.traceId,
            spanId: s.parentId,
            traceFlags: this.#api.TraceFlags.SAMPLED,
          });
    const links = s.links.map((spanId) => ({
      context: { traceId: s.traceId, spanId, traceFlags: this.#api.TraceFlags.SAMPLED },
    }));
    const span: Span = this.#tracer.startSpan(
      s.name,
      { startTime: s.startMs, attributes: s.attributes, links, root: s.parentId === undefined },
      parent,
    ) as Span;
    for (const e of s.events) span.addEvent(e.name, e.attributes, e.ms);
    if (s.error) span.setStatus({ code: this.#api.SpanStatusCode.ERROR });
    span.end(s.endMs);
  }

  log(l: LogSpec): void {
    if (!this.#logBound.admit()) return;
    const attributes: Record<string, string | number> = {
      'trajgate.type': l.type,
      'trajgate.seq': l.written.seq,
    };
    if (l.session !== undefined) attributes['trajgate.session'] = l.session;
    const context =
      l.traceId === undefined || l.spanId === undefined
        ? this.#api.ROOT_CONTEXT
        : this.#api.trace.setSpanContext(this.#api.ROOT_CONTEXT, {
            traceId: l.traceId,
            spanId: l.spanId,
            traceFlags: this.#api.TraceFlags.SAMPLED,
          });
    this.#logger.emit({
      timestamp: l.written.ms,
      severityNumber: l.warn ? WARN : INFO,
      severityText: l.warn ? 'WARN' : 'INFO',
      body: l.written.line,
      attributes,
      context,
    });
  }

  /**
   * Sends what is queued, for at most `ms`; then drops the rest and ends what is in flight, so
   * nothing of the export keeps the process up.
   */
  async close(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    });
    const flushed = Promise.allSettled([this.#traces.shutdown(), this.#logs.shutdown()]);
    await Promise.race([flushed, bound]);
    clearTimeout(timer);
    for (const post of this.#posts) post.destroy();
  }
}
