import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { AgentRequest } from '../../http/agent-message.js';
import { headerObject } from './header-object.js';
import type { RequestHead } from './request-parser.js';

/** Body bytes held for a consumer that does not read before the connection stops reading. */
export const HIGH_WATER = 16 * 1024;

/** What a request asks of its connection: stop or go on reading the socket for its body. */
export interface BodyFlow {
  hold(request: LeanRequest): void;
  release(request: LeanRequest): void;
}

/**
 * One request on a lean connection: its head as IncomingMessage has it (headers built by node's
 * own rule, header-object.ts) and its body as the parser decodes it, read by 'data' events or
 * async iteration. Bytes nobody reads yet are kept; past HIGH_WATER the connection stops
 * reading the socket until they are taken (backpressure down to TCP). `dump` drops the rest of
 * a body the handler did not read, as node:http does once the answer is sent.
 */
export class LeanRequest extends EventEmitter implements AgentRequest {
  readonly method: string;
  readonly url: string;
  readonly httpVersion: string;
  readonly httpVersionMajor: number;
  readonly httpVersionMinor: number;
  readonly rawHeaders: string[];
  readonly socket: Socket;
  readonly head: RequestHead;
  /** The parser read the whole message. */
  whole = false;
  /** 'end' was emitted (every byte read). */
  readableEnded = false;
  #headers: IncomingHttpHeaders | null = null;
  readonly #flow: BodyFlow;
  #queued: Buffer[] = [];
  #queuedBytes = 0;
  #flowing = false;
  #held = false;
  #dumped = false;
  #error: Error | null = null;
  #closed = false;
  #wake: (() => void) | null = null;
  /** No body bytes ever came. */
  #bodiless = true;
  /** node:http's parser would have gone on past the head (LeanSettings.readsAhead). */
  #handed = false;

  constructor(head: RequestHead, socket: Socket, flow: BodyFlow) {
    super();
    this.head = head;
    this.method = head.method;
    this.url = head.url;
    this.httpVersionMajor = head.versionMajor;
    this.httpVersionMinor = head.versionMinor;
    this.httpVersion = `${head.versionMajor}.${head.versionMinor}`;
    this.rawHeaders = head.rawHeaders as string[];
    this.socket = socket;
    this.#flow = flow;
  }

  /**
   * As node:http's `complete` reads. Until its parser would have gone on past the head (it hands
   * a request over there): the body was read to its end (or there was none), so a refusal then
   * of a request whose body nobody read closes the connection (respond.ts contentUnread), even
   * where the parser already framed the body. After it: the parser read the whole message.
   */
  get complete(): boolean {
    return this.whole && (this.readableEnded || this.#bodiless || this.#handed);
  }

  /** node:http's parser would now be past the head. */
  handed(): void {
    this.#handed = true;
  }

  get headers(): IncomingHttpHeaders {
    return (this.#headers ??= headerObject(this.rawHeaders));
  }

  /** Body bytes from the parser. */
  push(chunk: Buffer): void {
    this.#bodiless = false;
    if (this.#dumped || this.#closed) return;
    this.#queued.push(chunk);
    this.#queuedBytes += chunk.length;
    this.#pump();
  }

  /** The message is whole. */
  finish(): void {
    this.whole = true;
    this.#pump();
  }

  /** The connection closed: a body not whole errs ('error' only to whoever listens). */
  abort(): void {
    if (this.#closed) return;
    if (!this.whole && this.#error === null) {
      this.#error = Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
      if (this.listenerCount('error') > 0) this.emit('error', this.#error);
      this.#wake?.();
    }
    this.#close();
  }

  /** The answer is sent: whatever of the body is left is read and dropped. */
  dump(): void {
    this.#dumped = true;
    this.#queued = [];
    this.#queuedBytes = 0;
    this.#flowing = false;
    this.#release();
  }

  override on(event: string | symbol, listener: (...args: any[]) => void): this {
    super.on(event, listener);
    if (event === 'data') this.resume();
    return this;
  }

  pause(): this {
    this.#flowing = false;
    return this;
  }

  resume(): this {
    this.#flowing = true;
    process.nextTick(() => this.#pump());
    return this;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    for (;;) {
      const chunk = this.#queued.shift();
      if (chunk !== undefined) {
        this.#queuedBytes -= chunk.length;
        this.#release();
        yield chunk;
        continue;
      }
      if (this.#error !== null) throw this.#error;
      if (this.whole) {
        this.#ended();
        return;
      }
      await new Promise<void>((wake) => (this.#wake = wake));
      this.#wake = null;
    }
  }

  #pump(): void {
    this.#wake?.();
    while (this.#flowing && this.#queued.length > 0) {
      const chunk = this.#queued.shift() as Buffer;
      this.#queuedBytes -= chunk.length;
      this.emit('data', chunk);
    }
    if (this.#flowing && this.whole && this.#queued.length === 0) this.#ended();
    if (this.#queuedBytes > HIGH_WATER && !this.#held) {
      this.#held = true;
      this.#flow.hold(this);
    } else this.#release();
  }

  #release(): void {
    if (!this.#held || this.#queuedBytes > HIGH_WATER) return;
    this.#held = false;
    this.#flow.release(this);
  }

  #ended(): void {
    if (this.readableEnded) return;
    this.readableEnded = true;
    this.emit('end');
    this.#close();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#release();
    this.emit('close');
  }
}
