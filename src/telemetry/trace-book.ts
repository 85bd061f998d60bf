import type { Written } from '../journal/writer.js';
import type { SessionTrace } from './ids.js';
import { ridSpan, seqSpan, sessionTrace } from './ids.js';
import type { Attributes, OpenSpan, Sink } from './spans.js';
import { attributesOf, finish } from './spans.js';

/** OpenTelemetry semantic conventions for HTTP (stable). */
const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';

/** Requests waiting for their outcome; past it the oldest is sent as it stands (bounded memory). */
const MAX_OPEN = 10_000;
/** Sessions whose root span was sent; past it the oldest is forgotten (and sent again if seen). */
const MAX_SESSIONS = 100_000;

const EVENT_FIELDS = [
  'source',
  'kind',
  'target',
  'verdict',
  'boundary',
  'count',
  'reason',
  'approved',
  'approvedBy',
  'denied',
  'targetBytes',
  'held',
  'failed',
];
const OUTCOME_FIELDS = [
  'status',
  'bytesUp',
  'bytesDown',
  'durationMs',
  'error',
  'sni',
  'protocol',
  'via',
  'grpcStatus',
];
const RESULT_FIELDS = ['ok', 'error', 'tool', 'unlinked'];
/** Records of a session that are no request: a span each, named by type, with one span event. */
const ACTIONS: Record<string, readonly string[]> = {
  pause: ['boundary', 'count', 'reason', 'pausedAt'],
  resume: ['by', 'reset', 'keepMarks'],
  deny: ['by', 'released'],
  approve: ['by', 'pattern', 'kind', 'expiresAt', 'id'],
  revoke: ['by', 'id', 'pattern', 'kind'],
  'deny-pattern': ['by', 'pattern', 'id'],
  evict: ['reason', 'idleSince'],
  tools: ['change', 'server', 'digest'],
};
/** Records that end a span early or warn in a SIEM. */
const WARN_TYPES = new Set(['pause', 'deny', 'refusal', 'deny-pattern', 'revoke', 'credential']);

type Fields = Record<string, unknown>;

/**
 * Turns the journal's records, as written, into one trace per session: a root span, a span per
 * request, tunnel or tool call from its event record to its outcome (or a runner's result),
 * linked by `rid`; a span per pause and operator action with its span event; and a log record
 * of every record. It reads records only: what it sends is what the journal holds.
 */
export class TraceBook {
  readonly #startedAt: string;
  readonly #sink: Sink;
  readonly #sessions = new Map<string, SessionTrace>();
  readonly #open = new Map<number, OpenSpan>();

  constructor(startedAt: string, sink: Sink) {
    this.#startedAt = startedAt;
    this.#sink = sink;
  }

  written(w: Written): void {
    const r = w.record as unknown as Fields;
    const type = r.type as string;
    const session = typeof r.session === 'string' ? r.session : undefined;
    const trace = session === undefined ? undefined : this.#trace(session, w.ms);
    let spanId = trace?.rootId;
    if (trace !== undefined) {
      if (type === 'event') spanId = this.#event(trace, w, r);
      else if (type === 'outcome' || type === 'result') spanId = this.#end(trace, w, r);
      else if (type === 'flow' || type === 'tunnel') spanId = this.#change(trace, w, r);
      else if (ACTIONS[type] !== undefined) spanId = this.#action(trace, w, r, type);
    }
    const warn =
      WARN_TYPES.has(type) || (type === 'event' && r.verdict !== 'ALLOW') || r.failed === true;
    this.#sink.log({ written: w, type, session, traceId: trace?.traceId, spanId, warn });
    if (type === 'evict' && session !== undefined) this.#sessions.delete(session);
  }

  /**
   * An outcome (or a runner's result) the export dropped unread: its request's span, if one is
   * open, is dropped too instead of being kept for an outcome that will never come. True when
   * one was.
   */
  release(record: Written['record']): boolean {
    const r = record as unknown as Fields;
    if ((r.type !== 'outcome' && r.type !== 'result') || typeof r.rid !== 'number') return false;
    return this.#open.delete(r.rid);
  }

  /** Sends every open span as it stands (shutdown, reload): its outcome never came here. */
  flushOpen(ms: number): void {
    for (const open of this.#open.values()) this.#sink.span(unfinished(open, ms));
    this.#open.clear();
  }

  /** A new collector has none of the root spans sent so far: each is sent again when next seen. */
  forgetSessions(): void {
    this.#sessions.clear();
  }

  #trace(session: string, ms: number): SessionTrace {
    const known = this.#sessions.get(session);
    if (known !== undefined) return known;
    const trace = sessionTrace(this.#startedAt, session);
    if (this.#sessions.size >= MAX_SESSIONS)
      this.#sessions.delete(this.#sessions.keys().next().value as string);
    this.#sessions.set(session, trace);
    this.#sink.span({
      traceId: trace.traceId,
      spanId: trace.rootId,
      name: 'session',
      startMs: ms,
      endMs: ms,
      attributes: { 'trajgate.session': session },
      events: [],
      links: [],
      error: false,
    });
    return trace;
  }

  /** A first event record opens its request's span; one judged again (its `rid`) adds to it. */
  #event(trace: SessionTrace, w: Written, r: Fields): string {
    const decision = r.boundary === null ? `${r.verdict}` : `${r.verdict}: ${r.boundary}`;
    const attributes: Attributes = {
      ...attributesOf(r, EVENT_FIELDS),
      'trajgate.decision': decision,
      'trajgate.session': r.session as string,
    };
    const rule = r.rule as { name?: unknown } | undefined;
    if (typeof rule?.name === 'string') attributes['trajgate.rule'] = rule.name;
    if (typeof r.method === 'string') attributes[ATTR_HTTP_REQUEST_METHOD] = r.method;
    const again = typeof r.rid === 'number' ? this.#open.get(r.rid) : undefined;
    if (typeof r.rid === 'number') {
      if (again !== undefined) {
        again.events.push({ name: 'judged', ms: w.ms, attributes });
        Object.assign(again.attributes, attributes);
        again.lastMs = w.ms;
      }
      return again?.spanId ?? ridSpan(trace, r.rid);
    }
    const open: OpenSpan = {
      traceId: trace.traceId,
      spanId: ridSpan(trace, w.seq),
      parentId: trace.rootId,
      name: spanName(r),
      startMs: w.ms,
      lastMs: w.ms,
      attributes: { ...attributes, 'trajgate.rid': w.seq },
      events: [],
    };
    // A runner's call that was refused never runs: no result will come.
    if (r.source === 'ingest' && r.verdict !== 'ALLOW') {
      this.#sink.span(finish(open, w.ms, {}, false));
      return open.spanId;
    }
    if (this.#open.size >= MAX_OPEN) {
      const [rid, oldest] = this.#open.entries().next().value as [number, OpenSpan];
      this.#open.delete(rid);
      this.#sink.span(unfinished(oldest, oldest.lastMs));
    }
    this.#open.set(w.seq, open);
    return open.spanId;
  }

  /** An outcome (or a runner's result) ends its request's span. */
  #end(trace: SessionTrace, w: Written, r: Fields): string {
    if (typeof r.rid !== 'number') return trace.rootId;
    const open = this.#open.get(r.rid);
    if (open === undefined) return ridSpan(trace, r.rid);
    this.#open.delete(r.rid);
    const add =
      r.type === 'outcome'
        ? attributesOf(r, OUTCOME_FIELDS)
        : attributesOf(r, RESULT_FIELDS, 'trajgate.result.');
    if (typeof r.status === 'number') add[ATTR_HTTP_RESPONSE_STATUS_CODE] = r.status;
    this.#sink.span(finish(open, w.ms, add, r.failed === true || r.ok === false));
    return open.spanId;
  }

  /** A flow frozen, thawed or closed (a pause, a resume, a deny reaching it): a span event. */
  #change(trace: SessionTrace, w: Written, r: Fields): string {
    if (typeof r.rid !== 'number') return trace.rootId;
    const open = this.#open.get(r.rid);
    open?.events.push({
      name: String(r.change),
      ms: w.ms,
      attributes: attributesOf(r, ['reason']),
    });
    return open?.spanId ?? ridSpan(trace, r.rid);
  }

  /** A pause or an operator's action: a span of its own under the root, with its span event. */
  #action(trace: SessionTrace, w: Written, r: Fields, type: string): string {
    const spanId = seqSpan(trace, w.seq);
    const attributes = attributesOf(r, ACTIONS[type] as readonly string[]);
    attributes['trajgate.seq'] = w.seq;
    const links = heldRids(r).map((rid) => ridSpan(trace, rid));
    // The request that paused its session shows it too, on its own span.
    const trigger = r.type === 'pause' ? (r.trigger as Fields | undefined) : undefined;
    const rid = typeof trigger?.rid === 'number' ? trigger.rid : trigger?.seq;
    if (typeof rid === 'number')
      this.#open.get(rid)?.events.push({ name: 'pause', ms: w.ms, attributes });
    if (links.length > 0) attributes['trajgate.rids'] = links.length;
    this.#sink.span({
      traceId: trace.traceId,
      spanId,
      parentId: trace.rootId,
      name: r.type === 'resume' && r.once !== undefined ? 'approve-once' : type,
      startMs: w.ms,
      endMs: w.ms,
      attributes: { 'trajgate.session': r.session as string, ...attributes },
      events: [{ name: type, ms: w.ms, attributes }],
      links,
      error: false,
    });
    return spanId;
  }
}

/** `tunnel` for a CONNECT, `tool` for a tool call (bridge, runner hook), else `request`. */
function spanName(r: Fields): string {
  if (r.method === 'CONNECT') return 'tunnel';
  if (r.source === 'bridge' || r.source === 'ingest') return 'tool';
  return 'request';
}

/** The requests a record names: a pause's held ones, an approve-once's released ones. */
function heldRids(r: Fields): number[] {
  if (r.type === 'pause' && Array.isArray(r.held))
    return (r.held as { rid?: unknown }[]).flatMap((h) =>
      typeof h.rid === 'number' ? [h.rid] : [],
    );
  if (r.type === 'resume' && Array.isArray(r.once))
    return (r.once as unknown[]).filter((rid): rid is number => typeof rid === 'number');
  return [];
}

function unfinished(open: OpenSpan, ms: number) {
  return finish(open, ms, { 'trajgate.outcome': 'none seen' }, false);
}
