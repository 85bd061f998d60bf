import { createHash } from 'node:crypto';

/** A session's trace in this gateway process: its id and its root span's. */
export interface SessionTrace {
  readonly traceId: string;
  readonly rootId: string;
  /** The seed every span id of the trace is derived from. */
  readonly seed: string;
}

const hex = (text: string, chars: number): string =>
  createHash('sha256').update(text).digest('hex').slice(0, chars);

/**
 * A session's trace id is derived from the session id and the gateway's start (ISO 8601 ms),
 * so every span of the session in one process shares it without any state kept, and a restart
 * (which forgets nothing else) begins a new trace; `trajgate.session` joins them. All-zero ids
 * are invalid (W3C Trace Context § 3.2.2.3): a digest that starts so is a 2^-64 event, mapped
 * away all the same.
 */
export function sessionTrace(startedAt: string, session: string): SessionTrace {
  const seed = `trajgate\0${startedAt}\0${session}`;
  return { traceId: nonZero(hex(seed, 32)), rootId: nonZero(hex(`${seed}\0root`, 16)), seed };
}

/** The span of a request, tunnel or tool call: from its request id (`rid`), within its trace. */
export function ridSpan(trace: SessionTrace, rid: number): string {
  return nonZero(hex(`${trace.seed}\0rid\0${rid}`, 16));
}

/** The span of a record that is no request (a pause, an operator's action): from its seq. */
export function seqSpan(trace: SessionTrace, seq: number): string {
  return nonZero(hex(`${trace.seed}\0seq\0${seq}`, 16));
}

function nonZero(id: string): string {
  return /^0+$/.test(id) ? `${id.slice(0, -1)}1` : id;
}
