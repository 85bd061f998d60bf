import { createHash } from 'node:crypto';

/** A session's trace in this gateway process: its id, its root span's, and the span prefixes. */
export interface SessionTrace {
  readonly traceId: string;
  readonly rootId: string;
  /** 8 hex digits leading the span ids of its requests, and of its other records. */
  readonly ridPrefix: string;
  readonly seqPrefix: string;
}

/**
 * A session's trace id is derived from the session id and the gateway's start (ISO 8601 ms),
 * so every span of the session in one process shares it without any state kept, and a restart
 * (which forgets nothing else) begins a new trace; `trajgate.session` joins them. One digest per
 * session; all-zero ids are invalid (W3C Trace Context § 3.2.2.3), mapped away.
 */
export function sessionTrace(startedAt: string, session: string): SessionTrace {
  const hex = createHash('sha256').update(`trajgate\0${startedAt}\0${session}`).digest('hex');
  return {
    traceId: nonZero(hex.slice(0, 32)),
    rootId: nonZero(hex.slice(32, 48)),
    ridPrefix: hex.slice(48, 56),
    seqPrefix: hex.slice(56, 64),
  };
}

/**
 * The span of a request, tunnel or tool call: its trace's prefix, then its request id (`rid`,
 * the journal's seq, mod 2^32): found again from the rid alone, with no digest per request.
 */
export function ridSpan(trace: SessionTrace, rid: number): string {
  return nonZero(trace.ridPrefix + low32(rid));
}

/** The span of a record that is no request (a pause, an operator's action): from its seq. */
export function seqSpan(trace: SessionTrace, seq: number): string {
  return nonZero(trace.seqPrefix + low32(seq));
}

const low32 = (n: number): string => (n >>> 0).toString(16).padStart(8, '0');

function nonZero(id: string): string {
  return /^0+$/.test(id) ? `${id.slice(0, -1)}1` : id;
}
