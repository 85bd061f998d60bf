import type { Socket } from 'node:net';
import { hasBody } from '../../action/headers.js';
import type { ProxyHandlers } from '../engine-handlers.js';
import { lateHead } from '../request-rules.js';
import { LeanRequest } from './lean-request.js';
import type { BodyFlow } from './lean-request.js';
import type { Expiring, LeanClock } from './lean-clock.js';
import { LeanResponse } from './lean-response.js';
import { RequestParser } from './request-parser.js';
import type { RequestHead, RequestSink } from './request-parser.js';

/** Requests parsed ahead of their turn before the connection stops reading (pipelining). */
const MAX_QUEUED = 16;

/** What a lean connection reads at each request: limits (reload applies), and the drain. */
export interface LeanSettings {
  readonly headerBytes: number;
  readonly headerTimeout: number;
  /** Where it is kept while open and its head and idle deadlines checked (one per listener). */
  readonly clock: LeanClock<LeanConnection>;
  keepAliveIdle(): number;
  /** The gateway is stopping: answers say `Connection: close`, idle connections close. */
  draining(): boolean;
  /**
   * When node:http would have parsed past a request's head (LeanRequest.complete): before the
   * handler's first turn ends, as it parses a socket another node:http server handed over (a
   * read tunnel's), in JavaScript; else once that turn's microtasks ran, as it parses a socket
   * it consumes natively (a listener's, TLS).
   */
  readonly readsAhead: boolean;
}

type Turn =
  | { readonly kind: 'request'; readonly req: LeanRequest }
  | { readonly kind: 'upgrade'; readonly req: LeanRequest; readonly rest: Buffer }
  | { readonly kind: 'error'; readonly error: Error & { code?: string } };

/**
 * One client connection of the lean listener: one RequestParser for all its requests, answered
 * one at a time in order (RFC 9112 § 9.3.2: pipelined requests are parsed ahead and queued, the
 * binding cannot stop between them). A head has `headerTimeout` from its first byte (and the
 * first from the accept), else 408 as node:http answers it; between requests the connection
 * may idle `keepAliveIdle` (both checked by the listener's LeanClock). A body the handler left
 * unread is dropped once its answer is sent (node:http dumps it too); an answer that says close ends the connection. CONNECT and Upgrade
 * hand the socket over, with the bytes read past their head; a parse error is refused in turn.
 */
export class LeanConnection implements RequestSink, BodyFlow, Expiring {
  readonly #socket: Socket;
  readonly #settings: LeanSettings;
  readonly #handlers: ProxyHandlers;
  readonly #parser: RequestParser;
  readonly #queue: Turn[] = [];
  readonly #holds = new Set<LeanRequest>();
  /** The request whose body the parser is reading. */
  #reading: LeanRequest | null = null;
  /** The head just read wants the connection (its message ends with no body). */
  #upgrading: LeanRequest | null = null;
  #serving: { req: LeanRequest; res: LeanResponse } | null = null;
  #parsing = true;
  /** A head has begun and is not whole yet (node:http's connection is not idle then). */
  #inHead = false;
  /** No request has begun yet. */
  #fresh = true;
  /** The socket is a tunnel's (CONNECT or Upgrade). */
  #handedOver = false;
  /** The client ended its side: the connection ends once its answers are sent. */
  #endAfter = false;
  #done = false;
  #corked = false;
  /** The deadline under way: the head's (`headerTimeout`), the idle one, or none. */
  #clock: 'head' | 'idle' | null = null;
  due = Infinity;
  readonly #onData = (chunk: Buffer) => this.#data(chunk);

  constructor(socket: Socket, settings: LeanSettings, handlers: ProxyHandlers) {
    this.#socket = socket;
    this.#settings = settings;
    this.#handlers = handlers;
    this.#parser = new RequestParser(this, settings.headerBytes);
    socket.on('data', this.#onData);
    socket.on('end', () => this.#end());
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.#closed());
    socket.on('drain', () => this.#serving?.res.drained());
    settings.clock.add(this);
    this.#headClock();
  }

  messageBegin(): void {
    this.#inHead = true;
    this.#fresh = false;
    this.#stopClock('idle');
    this.#headClock();
  }

  head(head: RequestHead): void {
    this.#stopClock('head');
    this.#inHead = false;
    const req = new LeanRequest(head, this.#socket, this);
    if (head.upgrade) this.#upgrading = req;
    else {
      this.#reading = req;
      this.#queue.push({ kind: 'request', req });
    }
  }

  body(chunk: Buffer): void {
    this.#reading?.push(chunk);
  }

  end(): void {
    this.#reading?.finish();
    this.#reading = null;
  }

  hold(req: LeanRequest): void {
    this.#holds.add(req);
    this.#flow();
  }

  release(req: LeanRequest): void {
    this.#holds.delete(req);
    this.#flow();
  }

  #data(chunk: Buffer): void {
    const fed = this.#parser.feed(chunk);
    if (fed.kind === 'error' && (this.#reading !== null || this.#settings.readsAhead)) {
      // Refused where node:http's parser gets to it, not in turn: after the handler's turn of
      // the request whose body does not parse, or (reading ahead) of the next one to serve.
      const { error } = fed;
      this.#parsing = false;
      this.#socket.off('data', this.#onData);
      this.#next();
      return this.#afterTurn(() => this.#cut(error));
    }
    if (fed.kind === 'error') this.#stopParsing({ kind: 'error', error: fed.error });
    else if (fed.kind === 'upgrade') {
      const req = this.#upgrading as LeanRequest;
      this.#stopParsing({ kind: 'upgrade', req, rest: fed.rest });
    }
    this.#flow();
    this.#next();
  }

  #end(): void {
    if (this.#parsing) {
      const error = this.#parser.finish();
      this.#parsing = false;
      if (error !== null) return this.#cut(error);
    }
    this.#endAfter = true;
    this.#next();
  }

  /** Runs `then` where node:http's parser would go on past the head just handed over. */
  #afterTurn(then: () => void): void {
    if (this.#settings.readsAhead) then();
    else setImmediate(then);
  }

  /**
   * The message under way can never be whole (cut off, or its body does not parse): refused
   * now, not in its turn, as node:http does, unless an answer is already under way (raw bytes
   * would corrupt it: dropIfAnswered).
   */
  #cut(error: Error & { code?: string }): void {
    if (this.#done && this.#socket.destroyed) return;
    this.#parsing = false;
    this.#socket.off('data', this.#onData);
    // A body left unfinished errs when the socket closes (#closed), as node:http's does.
    this.#done = true;
    if (this.#serving?.res.headersSent === true) this.#socket.destroy();
    else this.#handlers.clientError(error, this.#socket);
  }

  /** No more requests are read on this connection; `last` is answered in its turn. */
  #stopParsing(last: Turn): void {
    this.#parsing = false;
    this.#socket.off('data', this.#onData);
    this.#stopClock('head');
    this.#queue.push(last);
  }

  /** Reads the socket while nobody holds body bytes and the queue has room. */
  #flow(): void {
    if (this.#done) return;
    const go = this.#parsing && this.#holds.size === 0 && this.#queue.length < MAX_QUEUED;
    if (go) this.#socket.resume();
    else this.#socket.pause();
  }

  #next(): void {
    if (this.#serving !== null || this.#done) return;
    const turn = this.#queue.shift();
    if (turn === undefined) {
      if (this.#endAfter) this.#finish();
      else if (this.#reading === null && this.#clock !== 'head') this.#idleClock();
      return;
    }
    this.#flow();
    if (turn.kind === 'error') {
      this.#done = true;
      return this.#handlers.clientError(turn.error, this.#socket);
    }
    if (turn.kind === 'upgrade') return this.#handOver(turn.req, turn.rest);
    const { req } = turn;
    const { head } = req;
    const draining = this.#settings.draining;
    const res = new LeanResponse(
      req,
      {
        method: head.method,
        versionMajor: head.versionMajor,
        versionMinor: head.versionMinor,
        te: req.headers.te as string | undefined,
        keepAliveMs: this.#settings.keepAliveIdle(),
        // Read when the head is written: a drain begun meanwhile closes after this answer.
        get shouldKeepAlive() {
          return head.shouldKeepAlive && !draining();
        },
      },
      {
        write: (data) => this.#write(data),
        finished: (last) => {
          // As node:http's end(): the connection is fully uncorked, a frozen flow's cork
          // (flow-registry.ts socketControl) included, so a whole answer reaches the agent.
          while (this.#socket.writableCorked > 0) this.#socket.uncork();
          this.#answered(req, last);
        },
        destroy: () => this.#socket.destroy(),
      },
    );
    this.#serving = { req, res };
    this.#handlers.request(req, res);
    this.#afterTurn(() => req.handed());
  }

  /** Head and first bytes of an answer go out as one segment (as node:http corks them). */
  #write(data: string | Buffer): boolean {
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      process.nextTick(() => {
        this.#corked = false;
        this.#socket.uncork();
      });
    }
    return this.#socket.write(data);
  }

  #answered(req: LeanRequest, last: boolean): void {
    this.#serving = null;
    const unread = !req.complete && hasBody(req);
    if (!req.readableEnded) req.dump();
    // Bytes after a closing answer that do not parse are refused, unless they are the unread
    // content of the request just answered (as dropIfAnswered decides for node:http).
    if (this.#queue[0]?.kind === 'error' && !unread) return this.#next();
    if (last || this.#settings.draining()) return this.#finish();
    this.#next();
  }

  /** The connection ends once what was written is sent; nothing more is read or answered. */
  #finish(): void {
    this.#done = true;
    this.#socket.end();
  }

  /** CONNECT or Upgrade: the socket is the tunnel's now, with what came past the head. */
  #handOver(req: LeanRequest, rest: Buffer): void {
    this.#done = true;
    this.#handedOver = true;
    this.#stopClock('idle');
    this.#parser.close();
    // As node:http leaves it: neither paused nor flowing, so the tunnel's reader starts it.
    (this.#socket as { readableFlowing: boolean | null }).readableFlowing = null;
    this.#handlers.raw(req.method === 'CONNECT' ? 'connect' : 'upgrade', req, this.#socket, rest);
  }

  #headClock(): void {
    if (this.#clock === 'head' || !this.#parsing) return;
    this.#clock = 'head';
    this.due = Date.now() + this.#settings.headerTimeout;
  }

  #idleClock(): void {
    this.#clock = 'idle';
    this.due = Date.now() + this.#settings.keepAliveIdle();
  }

  /** Ends the deadline under way if it is `which` (any, without). */
  #stopClock(which?: 'head' | 'idle'): void {
    if (which !== undefined && this.#clock !== which) return;
    this.#clock = null;
    this.due = Infinity;
  }

  /** The clock's tick: the head came too late (408 in its turn), or the idle time is up. */
  expire(): void {
    const which = this.#clock;
    this.#stopClock();
    if (which === 'idle') return void this.#socket.destroy();
    this.#stopParsing({ kind: 'error', error: lateHead() });
    this.#flow();
    this.#next();
  }

  /** No request has begun on it yet. */
  get fresh(): boolean {
    return this.#fresh;
  }

  /** Drain: a connection with nothing under way (not even part of a head) closes now. */
  closeIfIdle(): void {
    // Handed over (a tunnel: the drain has its own deadline for those) or already ending.
    if (this.#done || this.#inHead) return;
    if (this.#serving === null && this.#queue.length === 0 && this.#reading === null)
      this.#socket.destroy();
  }

  /** A stop: the connection closes now, unless its socket is a tunnel's (closed with those). */
  close(): void {
    if (!this.#handedOver) this.#socket.destroy();
  }

  #closed(): void {
    this.#done = true;
    this.#parser.close();
    this.#stopClock();
    this.#settings.clock.remove(this);
    this.#reading?.abort();
    for (const turn of this.#queue) if (turn.kind === 'request') turn.req.abort();
    const serving = this.#serving;
    if (serving === null) return;
    serving.req.abort();
    if (!serving.res.writableFinished) serving.res.destroy();
  }
}
