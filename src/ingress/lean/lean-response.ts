import { EventEmitter } from 'node:events';
import type { OutgoingHttpHeaders } from 'node:http';
import { TrajgateError } from '../../errors.js';
import type { AgentAnswer, AnsweredRequest } from '../../http/agent-message.js';
import type { ResponseFor, ResponseHead } from './response-head.js';
import { responseHead } from './response-head.js';

/** Where an answer's bytes go: the client connection, in order, answer after answer. */
export interface ResponseWire {
  /** Writes; false once the socket's buffer is full ('drain' is then emitted on the response). */
  write(data: string | Buffer): boolean;
  /** The answer is whole; `last`: the connection closes after it. */
  finished(last: boolean): void;
  /** The answer cannot be finished as framed: the connection is closed at once. */
  destroy(): void;
}

const LAST_CHUNK = '0\r\n\r\n';

/**
 * One answer on a lean connection: the part of ServerResponse the forwarder, the relay and the
 * refusals use (writeHead with raw or object fields, write with backpressure, end, destroy,
 * headersSent and the writable flags, 'drain' and 'close'), writing what node:http writes
 * (response-head.ts) straight to the connection, with no stream of its own. `setHeader` and
 * `statusCode` serve a head written at the first write or the end.
 */
export class LeanResponse extends EventEmitter implements AgentAnswer {
  statusCode = 200;
  readonly #for: ResponseFor;
  readonly #wire: ResponseWire;
  #set: OutgoingHttpHeaders | null = null;
  #head: ResponseHead | null = null;
  #ended = false;
  #finished = false;
  #destroyed = false;
  #needDrain = false;

  constructor(
    readonly req: AnsweredRequest,
    responseFor: ResponseFor,
    wire: ResponseWire,
  ) {
    super();
    this.#for = responseFor;
    this.#wire = wire;
  }

  get headersSent(): boolean {
    return this.#head !== null;
  }
  get writableEnded(): boolean {
    return this.#ended;
  }
  get writableFinished(): boolean {
    return this.#finished;
  }
  get destroyed(): boolean {
    return this.#destroyed;
  }
  get writableNeedDrain(): boolean {
    return this.#needDrain;
  }

  setHeader(name: string, value: string | number | readonly string[]): this {
    if (this.#head !== null) throw new TrajgateError('E_INTERNAL', 'headers already sent');
    (this.#set ??= {})[name] = value as string;
    return this;
  }

  /** 100 Continue, once the request was judged (RFC 9110 § 10.1.1). */
  writeContinue(): void {
    if (!this.#destroyed) this.#wire.write('HTTP/1.1 100 Continue\r\n\r\n');
  }

  writeHead(status: number, headers: OutgoingHttpHeaders | (string | number)[] = {}): this {
    if (this.#head !== null) throw new TrajgateError('E_INTERNAL', 'headers already sent');
    this.statusCode = status;
    const merged =
      this.#set === null || Array.isArray(headers) ? headers : { ...this.#set, ...headers };
    this.#head = responseHead(status, merged, this.#for);
    this.#wire.write(this.#head.text);
    return this;
  }

  write(chunk: Buffer | string): boolean {
    if (this.#ended || this.#destroyed) return false;
    if (this.#head === null) this.writeHead(this.statusCode, this.#set ?? {});
    const head = this.#head as ResponseHead;
    const size = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    if (!head.hasBody || size === 0) return !this.#needDrain;
    let ok: boolean;
    if (head.chunked) {
      // Every part goes; the last write says whether the socket's buffer is past its mark.
      this.#wire.write(`${size.toString(16)}\r\n`);
      this.#wire.write(chunk);
      ok = this.#wire.write('\r\n');
    } else ok = this.#wire.write(chunk);
    if (!ok) this.#needDrain = true;
    return ok;
  }

  /** The connection's socket drained: a writer waiting on write()'s false goes on. */
  drained(): void {
    if (!this.#needDrain) return;
    this.#needDrain = false;
    this.emit('drain');
  }

  addTrailers(_fields: OutgoingHttpHeaders): void {
    // Trailers go to HTTP/2 agents only (ResponseRelay); an HTTP/1.1 answer carries none.
  }

  end(chunk?: Buffer | string): this {
    if (this.#ended || this.#destroyed) return this;
    if (chunk !== undefined) this.write(chunk);
    else if (this.#head === null) this.writeHead(this.statusCode, this.#set ?? {});
    this.#ended = true;
    const head = this.#head as ResponseHead;
    if (head.chunked) this.#wire.write(LAST_CHUNK);
    this.#finished = true;
    this.#wire.finished(head.last);
    this.emit('finish');
    this.emit('close');
    return this;
  }

  /** An answer cut (or the client gone): the connection closes, nothing more is written. */
  destroy(): this {
    if (this.#destroyed || this.#finished) return this;
    this.#destroyed = true;
    this.#wire.destroy();
    this.emit('close');
    return this;
  }
}
