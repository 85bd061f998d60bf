import type { AgentAnswer, AgentRequest } from '../http/agent-message.js';
import type { Dispatcher } from 'undici';
import { isTrajgateError, TrajgateError } from '../errors.js';
import type { Capture } from './capture.js';
import type { CredentialScrubber } from './credential-scrub.js';
import type { Flow, FlowControl } from './flows.js';
import { grpcStatus, isGrpcCall } from './grpc.js';
import { downstreamRawHeaders, expectsContinue, fieldObject } from './headers.js';
import { plainRefusal } from './refusal.js';
import { sendRefusal } from './respond.js';
import { ScrubbedBody, scrubbedHead } from './scrub-body.js';
import type { Transfer } from './transfer.js';
import { upstreamFailure } from './transfer.js';

/** How a forwarded request ended; `stopped`: its flow was held or closed before it was sent. */
export type Forwarded = Transfer & { readonly stopped?: 'held' | 'closed' };

/** The agent stopped sending the body it announced: answered 408, the upstream request aborted. */
const bodyStalled = (ms: number) =>
  new TrajgateError('E_BODY_TIMEOUT', `request body stalled: no bytes from the agent for ${ms} ms`);

/** An answer whose credential values cannot be looked for is refused, not passed on unread. */
const unscrubbable = (coding: string) =>
  new TrajgateError(
    'E_BODY_UNSUPPORTED',
    `the upstream answered in Content-Encoding ${JSON.stringify(coding)}, which trajgate cannot decode to keep credential values out of it`,
    [],
    { status: 502 },
  );

/**
 * Looks at each chunk of a request body before it goes up: why the request must stop now (a
 * sentinel out of place), or null.
 */
export type BodyWatch = (chunk: Buffer) => string | null | Promise<string | null>;

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
  /** The body on its way through `scrub`, from the head on. */
  #scrubbed: ScrubbedBody | null = null;

  /** `scrub`: the request carried swapped-in credentials, whose values the answer must not. */
  constructor(
    private readonly res: AgentAnswer,
    private readonly upstream: string,
    private readonly capture: Capture | undefined,
    private readonly resolve: (transfer: Forwarded) => void,
    private readonly flow: Flow,
    private readonly scrub?: CredentialScrubber,
    private readonly watch?: BodyWatch,
  ) {}

  /**
   * The request body, counted as undici pulls it (a 'data' listener would start it early).
   * undici pulls once the request is judged and its upstream connected: only then is an agent
   * that expects it sent `100 Continue`, so a refused or unreachable request's body is never
   * invited. A gap longer than `idleMs` while waiting for the agent (not while undici holds
   * back, nor while frozen) aborts the request. A `prepared` body was read by the caller, who
   * captured it as the agent sent it: it goes instead, uncaptured.
   */
  async *requestBody(req: AgentRequest, idleMs: number, prepared?: Buffer): AsyncGenerator<Buffer> {
    if (prepared === undefined && expectsContinue(req)) this.res.writeContinue();
    const source: AsyncIterable<Buffer> | Iterable<Buffer> =
      prepared === undefined ? (req as AsyncIterable<Buffer>) : [prepared];
    this.#waiting = true;
    const idle = (this.#idle = setTimeout(() => {
      if (this.#waiting && !this.#frozen) this.#abort?.(bodyStalled(idleMs));
      else idle.refresh();
    }, idleMs));
    try {
      for await (const chunk of source) {
        this.#waiting = false;
        if (this.#frozen) await new Promise<void>((thawed) => (this.#thawed = thawed));
        // Closed meanwhile: the body errs, so no upstream reads a shorter one as whole.
        if (this.flow.closed !== null) throw flowStopped(this.flow.closed);
        const stop = this.watch === undefined ? null : await this.watch(chunk);
        if (stop !== null) {
          this.#stopped = 'closed';
          throw flowStopped(stop);
        }
        this.flow.up(chunk.length);
        if (prepared === undefined) this.capture?.request(chunk);
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
    const res = this.res;
    // The agent left while the upstream was being reached: its 'close' is past, nothing is sent.
    if (res.destroyed && !res.writableFinished) return abort(new Error('client closed'));
    this.#abort = abort;
    flow.attach(this);
    res.once('close', () => {
      if (!res.writableFinished) abort(new Error('client closed'));
    });
  }

  /** Its session paused it: nothing goes up or down until thawed (H2Upstream's timer waits). */
  get frozen(): boolean {
    return this.#frozen;
  }

  freeze(): void {
    this.#frozen = true;
    this.#scrubbed?.freeze();
  }

  thaw(): void {
    this.#frozen = false;
    this.#scrubbed?.thaw();
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

  onHeaders(statusCode: number, raw: readonly (Buffer | string)[], resume: () => void): boolean {
    if (statusCode < 200) return true; // informational: the final response follows
    this.#resume = resume;
    if (this.#frozen) {
      this.#hold(() => this.#head(statusCode, raw));
      return false;
    }
    this.#head(statusCode, raw);
    return true;
  }

  #head(statusCode: number, raw: readonly (Buffer | string)[]): void {
    this.#status = statusCode;
    let headers = downstreamRawHeaders(raw);
    if (this.scrub !== undefined) {
      const head = scrubbedHead(this.scrub, headers);
      if ('unsupported' in head) return this.#abort?.(unscrubbable(head.unsupported));
      headers = head.fields;
      this.#scrubbed = new ScrubbedBody(this.scrub, head.coding, this.#sink());
    }
    this.#grpc = grpcStatus(headers);
    this.capture?.responseStart(statusCode, headers);
    // A status in the head is gRPC's Trailers-Only answer, whose HEADERS frame ends the stream:
    // clients read a status only there (PROTOCOL-HTTP2.md), so the head is set, not written,
    // and goes with the end (Node sends it then as one frame with END_STREAM).
    if (this.#grpc !== undefined && isGrpcCall(this.res.req)) {
      this.res.statusCode = statusCode;
      for (const [name, value] of Object.entries(fieldObject(headers)))
        this.res.setHeader(name, value);
      return;
    }
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
    const resume = wake ? (this.#resume as () => void) : null;
    if (this.#scrubbed !== null) return this.#scrubbed.write(chunk, resume);
    if (this.#send(chunk)) return true;
    if (resume !== null) this.res.once('drain', resume);
    return false;
  }

  #send(chunk: Buffer): boolean {
    this.#bytesDown += chunk.length;
    this.capture?.response(chunk);
    return this.res.write(chunk);
  }

  /** Where a scrubbed body goes; a body that fails to decode ends the answer as cut. */
  #sink() {
    return {
      send: (chunk: Buffer) => this.#send(chunk),
      drained: (then: () => void) => void this.res.once('drain', then),
      failed: (err: Error) => {
        if (!this.#upstreamDone) return this.#abort?.(err);
        this.#fail(502, upstreamFailure(err, this.upstream).reason);
      },
    };
  }

  onComplete(trailers: readonly (Buffer | string)[] | null): void {
    this.#upstreamDone = true;
    const raw = trailers ?? [];
    if (this.#frozen) this.#hold(() => this.#complete(raw));
    else this.#complete(raw);
  }

  /**
   * Ends the answer; an HTTP/2 agent gets the upstream's trailers (gRPC's status is there),
   * hop-by-hop fields removed as from a header section (RFC 9110 § 6.5.1).
   */
  #complete(trailers: readonly (Buffer | string)[]): void {
    this.#completed = true;
    if (this.#scrubbed === null) return this.#finish(trailers);
    this.#scrubbed.end(() => this.#finish(trailers));
  }

  #finish(trailers: readonly (Buffer | string)[]): void {
    if (trailers.length > 0) {
      const unscrubbed = downstreamRawHeaders(trailers).slice(0, -2);
      const fields = this.scrub === undefined ? unscrubbed : this.scrub.headers(unscrubbed);
      this.#grpc = grpcStatus(fields) ?? this.#grpc;
      if (this.res.req.httpVersionMajor === 2) this.res.addTrailers(fieldObject(fields));
    }
    this.res.end();
    this.#done();
  }

  onError(err: Error): void {
    const res = this.res;
    if (this.#stopped !== null) return this.#flowStopped(err.message);
    if (res.destroyed && !res.writableFinished) return this.#done('client closed');
    const failure =
      isTrajgateError(err) && (err.code === 'E_BODY_TIMEOUT' || err.code === 'E_BODY_UNSUPPORTED')
        ? { status: err.status ?? 502, reason: err.message }
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
    if (!res.destroyed) {
      // An answer under way is cut; a gRPC call's ends with the refusal as its status.
      if (!res.headersSent) this.#status = status;
      sendRefusal(res, plainRefusal(status, reason));
    }
    this.#done(reason, stopped);
  }

  #done(error?: string, stopped?: 'held' | 'closed'): void {
    clearTimeout(this.#idle);
    this.#scrubbed?.close();
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
