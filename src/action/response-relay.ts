import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { isTrajgateError, TrajgateError } from '../errors.js';
import type { Capture } from './capture.js';
import type { Flow, FlowControl } from './flows.js';
import { downstreamRawHeaders, expectsContinue } from './headers.js';
import { plainRefusal } from './refusal.js';
import { cutAnswer, sendRefusal } from './respond.js';
import type { Transfer } from './transfer.js';
import { upstreamFailure } from './transfer.js';

/** How a forwarded request ended; `stopped`: its flow was held or closed before it was sent. */
export type Forwarded = Transfer & { readonly stopped?: 'held' | 'closed' };

/** The agent stopped sending the body it announced: answered 408, the upstream request aborted. */
const bodyStalled = (ms: number) =>
  new TrajgateError('E_BODY_TIMEOUT', `request body stalled: no bytes from the agent for ${ms} ms`);

/** Why undici was told to abort: the flow was held before it was sent (judged again) or closed. */
const flowStopped = (reason: string) => new TrajgateError('E_FLOW_CLOSED', reason);

/**
 * One request's dispatch handler and its flow's control: writes the response to the agent as
 * undici parses it, with backpressure, and counts the bytes each way. Frozen (its session
 * paused), nothing more of the body goes up and nothing more of the answer comes down until
 * thawed; closed, the upstream request is aborted. At the moment undici would write the request
 * (onConnect) a flow that is not live is not sent at all: held, it is judged again; closed,
 * refused. One object per request, methods shared.
 */
export class ResponseRelay implements Dispatcher.DispatchHandler, FlowControl {
  #status: number | null = null;
  #resume: (() => void) | null = null;
  #abort: ((err: Error) => void) | null = null;
  #idle: NodeJS.Timeout | undefined;
  /** The body is waiting for the agent's next bytes (not for undici to pull). */
  #waiting = false;
  #bytesDown = 0;
  #frozen = false;
  /** What the upstream said while frozen, written on thaw in order. */
  #later: (() => void)[] | null = null;
  #thawed: (() => void) | null = null;
  #completed = false;
  /** undici delivered the whole answer (written, or held while frozen). */
  #upstreamDone = false;
  /** Set before undici is told to abort for the flow's sake. */
  #stopped: 'held' | 'closed' | null = null;
  /** A gRPC call's status (its `grpc-status` trailer, or header in a trailers-only answer). */
  #grpc: number | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly upstream: string,
    private readonly capture: Capture | undefined,
    private readonly resolve: (transfer: Forwarded) => void,
    private readonly flow: Flow,
  ) {}

  /**
   * The request body, counted as undici pulls it (a 'data' listener would start it early).
   * undici pulls once the request is judged and its upstream connected: only then is an agent
   * that expects it sent `100 Continue`, so a refused or unreachable request's body is never
   * invited. A gap longer than `idleMs` while waiting for the agent (not while undici holds
   * back, nor while frozen) aborts the request.
   */
  async *requestBody(req: IncomingMessage, idleMs: number): AsyncGenerator<Buffer> {
    if (expectsContinue(req)) this.res.writeContinue();
    this.#waiting = true;
    const idle = (this.#idle = setTimeout(() => {
      if (this.#waiting && !this.#frozen) this.#abort?.(bodyStalled(idleMs));
      else idle.refresh();
    }, idleMs));
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        this.#waiting = false;
        if (this.#frozen) await new Promise<void>((thawed) => (this.#thawed = thawed));
        // Closed meanwhile: the body errs, so no upstream reads a shorter one as whole.
        if (this.flow.closed !== null) throw flowStopped(this.flow.closed);
        this.flow.up(chunk.length);
        this.capture?.request(chunk);
        yield chunk;
        this.#waiting = true;
        idle.refresh();
      }
    } finally {
      clearTimeout(idle);
    }
  }

  onConnect(abort: (err: Error) => void): void {
    const flow = this.flow;
    if (!flow.live) {
      this.#stopped = flow.closed === null ? 'held' : 'closed';
      return abort(flowStopped(flow.closed ?? 'session paused'));
    }
    this.#abort = abort;
    flow.attach(this);
    const res = this.res;
    res.once('close', () => {
      if (!res.writableFinished) abort(new Error('client closed'));
    });
  }

  freeze(): void {
    this.#frozen = true;
  }

  thaw(): void {
    this.#frozen = false;
    this.#thawed?.();
    this.#thawed = null;
    const later = this.#later;
    this.#later = null;
    if (later === null) return;
    for (const run of later) run();
    const resume = this.#resume;
    if (resume === null || this.#completed) return;
    if (this.res.writableNeedDrain) this.res.once('drain', resume);
    else resume();
  }

  /** Keeps what the upstream said while frozen, for the thaw (no array until then). */
  #hold(run: () => void): void {
    (this.#later ??= []).push(run);
  }

  close(reason: string): void {
    if (this.#completed) return;
    this.#stopped = 'closed';
    if (this.#upstreamDone) {
      // undici is done (its answer held while frozen): nothing to abort, the agent gets 403.
      this.#later = null;
      return this.#fail(403, `trajgate closed this request: ${reason}`, 'closed');
    }
    this.#abort?.(flowStopped(reason));
    this.#thawed?.();
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // informational: the final response follows
    this.#resume = resume;
    if (this.#frozen) {
      this.#hold(() => this.#head(statusCode, raw));
      return false;
    }
    this.#head(statusCode, raw);
    return true;
  }

  #head(statusCode: number, raw: Buffer[]): void {
    this.#status = statusCode;
    const headers = downstreamRawHeaders(raw);
    this.#grpc = grpcStatus(headers);
    this.capture?.responseStart(statusCode, headers);
    this.res.writeHead(statusCode, headers);
  }

  onData(chunk: Buffer): boolean {
    if (this.#frozen) {
      this.#hold(() => this.#write(chunk, false));
      return false;
    }
    return this.#write(chunk, true);
  }

  /** Writes a chunk down; `wake`: undici waits on its return, so resume it on drain. */
  #write(chunk: Buffer, wake: boolean): boolean {
    this.#bytesDown += chunk.length;
    this.capture?.response(chunk);
    if (this.res.write(chunk)) return true;
    if (wake) this.res.once('drain', this.#resume as () => void);
    return false;
  }

  onComplete(trailers: (Buffer | string)[] | null): void {
    this.#upstreamDone = true;
    if (this.#frozen) this.#hold(() => this.#complete(trailers));
    else this.#complete(trailers);
  }

  /**
   * Ends the answer; an HTTP/2 agent gets the upstream's trailers (gRPC's status is there),
   * hop-by-hop fields removed as from a header section (RFC 9110 § 6.5.1).
   */
  #complete(trailers: (Buffer | string)[] | null): void {
    this.#completed = true;
    if (trailers && trailers.length > 0) {
      const fields = downstreamRawHeaders(trailers).slice(0, -2);
      this.#grpc = grpcStatus(fields) ?? this.#grpc;
      if (this.res.req.httpVersionMajor === 2) this.res.addTrailers(pairs(fields));
    }
    this.res.end();
    this.#done();
  }

  onError(err: Error): void {
    const res = this.res;
    if (this.#stopped !== null) return this.#flowStopped(err.message);
    if (res.destroyed && !res.writableFinished) return this.#done('client closed');
    const failure =
      isTrajgateError(err) && err.code === 'E_BODY_TIMEOUT'
        ? { status: 408, reason: err.message }
        : upstreamFailure(err, this.upstream);
    this.#fail(failure.status, failure.reason);
  }

  /** Held before it was sent: nothing answered, it is judged again. Closed: refused. */
  #flowStopped(reason: string): void {
    if (this.#stopped === 'held') return this.#done(undefined, 'held');
    this.#fail(403, `trajgate closed this request: ${reason}`, 'closed');
  }

  #fail(status: number, reason: string, stopped?: 'closed'): void {
    const res = this.res;
    if (res.headersSent) {
      cutAnswer(res);
    } else if (!res.destroyed) {
      sendRefusal(res, plainRefusal(status, reason));
      this.#status = status;
    }
    this.#done(reason, stopped);
  }

  #done(error?: string, stopped?: 'held' | 'closed'): void {
    clearTimeout(this.#idle);
    const transfer: { -readonly [K in keyof Forwarded]: Forwarded[K] } = {
      status: this.#status,
      bytesUp: this.flow.bytesUp,
      bytesDown: this.#bytesDown,
    };
    if (error !== undefined) transfer.error = error;
    if (stopped !== undefined) transfer.stopped = stopped;
    if (this.#grpc !== undefined) transfer.grpcStatus = this.#grpc;
    this.resolve(transfer);
  }
}

/** `grpc-status` in a flat field list, as a number; undefined when absent or not a number. */
function grpcStatus(fields: readonly string[]): number | undefined {
  for (let i = 0; i < fields.length; i += 2) {
    if ((fields[i] as string).toLowerCase() !== 'grpc-status') continue;
    const value = fields[i + 1] as string;
    return /^\d{1,3}$/.test(value) ? Number(value) : undefined;
  }
  return undefined;
}

/** A flat field list as an object, repeated names joined (RFC 9110 § 5.3). */
function pairs(fields: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) {
    const name = (fields[i] as string).toLowerCase();
    const value = fields[i + 1] as string;
    out[name] = name in out ? `${out[name]}, ${value}` : value;
  }
  return out;
}
