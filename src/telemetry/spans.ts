import type { Written } from '../journal/writer.js';

export type Attributes = Record<string, string | number | boolean | string[]>;

/** A finished span, as plain data: otlp.ts hands it to the SDK with these ids and times. */
export interface SpanSpec {
  readonly traceId: string;
  readonly spanId: string;
  /** Absent for a session's root span. */
  readonly parentId?: string;
  readonly name: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: Attributes;
  readonly events: readonly { name: string; ms: number; attributes: Attributes }[];
  /** Other spans of the same trace (the requests a pause held, an approve-once released). */
  readonly links: readonly string[];
  readonly error: boolean;
}

/** A journal record as an OTLP log record, with the span it belongs to when there is one. */
export interface LogSpec {
  readonly written: Written;
  readonly type: string;
  readonly session: string | undefined;
  readonly traceId?: string;
  readonly spanId?: string;
  readonly warn: boolean;
}

/** Where finished spans and log records go (otlp.ts; tests may collect them). */
export interface Sink {
  span(span: SpanSpec): void;
  log(log: LogSpec): void;
}

/** A request, tunnel or tool call whose outcome is not journaled yet. */
export interface OpenSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentId: string;
  readonly name: string;
  readonly startMs: number;
  lastMs: number;
  readonly attributes: Attributes;
  readonly events: { name: string; ms: number; attributes: Attributes }[];
}

/** Ends an open span at `ms` with what its outcome (or its absence) adds. */
export function finish(open: OpenSpan, ms: number, add: Attributes, error: boolean): SpanSpec {
  return {
    traceId: open.traceId,
    spanId: open.spanId,
    parentId: open.parentId,
    name: open.name,
    startMs: open.startMs,
    endMs: Math.max(ms, open.startMs),
    attributes: { ...open.attributes, ...add },
    events: open.events,
    links: [],
    error,
  };
}

/** The record's fields that are given and scalar (or lists of strings), under `prefix`. */
export function attributesOf(
  record: object,
  names: readonly string[],
  prefix = 'trajgate.',
): Attributes {
  const out: Attributes = {};
  for (const name of names) {
    const value = (record as Record<string, unknown>)[name];
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      out[prefix + name] = value;
    else if (Array.isArray(value) && value.every((v) => typeof v === 'string'))
      out[prefix + name] = value as string[];
  }
  return out;
}
