import { TrajgateError } from '../../errors.js';
import type { NativeParser, OnHeadersComplete, RequestParseError } from '../../http/llhttp.js';
import {
  HTTPParser,
  METHODS,
  parseErrorOf,
  READ_BODY,
  requestParseError,
  SKIP_BODY_UPGRADE,
} from '../../http/llhttp.js';

/**
 * Header fields per section (head or trailers). Past 1,000 `node:http` keeps in `headers` only
 * the first 1,000 and in `rawHeaders` what came before the binding's hand-over that passed
 * 2,000 names and values (MAX_HEADER_PAIRS), while llhttp frames with them all: a request would
 * be judged on part of its head. Here it is refused, 431 as a head over limits.headerBytes.
 */
export const MAX_FIELDS = 1_000;

/** A request head as llhttp read it: the fields `node:http` puts on an IncomingMessage. */
export interface RequestHead {
  readonly method: string;
  /** The request-target as written. */
  readonly url: string;
  readonly versionMajor: number;
  readonly versionMinor: number;
  /** Names and values in order as received, the values' trailing whitespace trimmed. */
  readonly rawHeaders: readonly string[];
  readonly shouldKeepAlive: boolean;
  /** CONNECT, or `Upgrade` named in `Connection`: the bytes after the head are not HTTP. */
  readonly upgrade: boolean;
}

/** Where a connection's requests go, in byte order; called only from inside `feed`/`finish`. */
export interface RequestSink {
  /** The first byte of a head (CR LF between requests is skipped): its clock starts here. */
  messageBegin(): void;
  /** The head is whole (its clock stops); for an upgrade, `feed` then returns the rest. */
  head(head: RequestHead): void;
  /** Decoded body bytes (chunked framing removed); the buffer is the sink's to keep. */
  body(chunk: Buffer): void;
  /** The message is whole. An upgrade ends here too, with no body and no trailers. */
  end(rawTrailers: readonly string[]): void;
}

/** What one `feed` left: read on, hand the rest to a tunnel, or refuse the connection. */
export type Fed =
  | { readonly kind: 'more' }
  | { readonly kind: 'upgrade'; readonly rest: Buffer }
  | { readonly kind: 'error'; readonly error: RequestParseError };

const MORE: Fed = { kind: 'more' };

/**
 * One connection's HTTP/1.1 request parser: llhttp strict (no lenient flags, as `node:http`
 * without --insecure-http-parser), one instance for every request on the connection, pipelined
 * or split over any number of reads. It frames (RFC 9112 § 6: Content-Length, chunked, and the
 * refusals of both at once or of conflicting lengths) and reports; timers, answers and
 * backpressure belong to the connection. After an upgrade or an error it is done; `close` it
 * when the connection closes, whatever happened: the native parser is never garbage-collected.
 */
export class RequestParser {
  readonly #native: NativeParser;
  readonly #sink: RequestSink;
  #state: 'open' | 'upgraded' | 'failed' | 'finished' | 'closed' = 'open';
  /** Fields and target of the current section when the binding hands them over in pieces. */
  #fields: string[] = [];
  /** Names and values handed over so far in this section, kept or not. */
  #given = 0;
  #url = '';
  #inHead = false;
  #upgrade = false;
  /** Set inside a callback: every later callback of that `feed` is ignored. */
  #refused: RequestParseError | null = null;

  constructor(sink: RequestSink, headerBytes: number) {
    this.#sink = sink;
    const native = new HTTPParser();
    native.initialize(HTTPParser.REQUEST, {}, headerBytes, HTTPParser.kLenientNone);
    native[HTTPParser.kOnMessageBegin] = () => this.#begin();
    native[HTTPParser.kOnHeaders] = (fields: string[], url: string) => this.#pieces(fields, url);
    native[HTTPParser.kOnHeadersComplete] = ((major, minor, fields, method, url, _s, _m, up, ka) =>
      this.#head(major, minor, fields, method, url, up, ka)) satisfies OnHeadersComplete;
    native[HTTPParser.kOnBody] = (chunk: Buffer) => {
      if (this.#refused === null) sink.body(chunk);
    };
    native[HTTPParser.kOnMessageComplete] = () => this.#end();
    this.#native = native;
  }

  /** Parses `chunk`, calling the sink for what it completes. */
  feed(chunk: Buffer): Fed {
    this.#live('feed');
    // The binding reads an empty buffer as the end of input.
    if (chunk.length === 0) return MORE;
    const read = this.#native.execute(chunk);
    if (this.#refused !== null) return this.#fail(this.#refused);
    if (typeof read !== 'number') return this.#fail(parseErrorOf(read));
    if (!this.#upgrade) return MORE;
    this.#state = 'upgraded';
    return { kind: 'upgrade', rest: chunk.subarray(read) };
  }

  /** The client ended its side: null, or why the bytes so far are not whole requests. */
  finish(): RequestParseError | null {
    this.#live('finish');
    const err = this.#native.finish();
    this.#state = 'finished';
    return err === undefined ? null : this.#fail(parseErrorOf(err)).error;
  }

  /** Frees the native parser once the current call stack (maybe a sink callback) unwinds. */
  close(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    setImmediate(() => this.#native.close());
  }

  #live(what: string): void {
    if (this.#state !== 'open') {
      throw new TrajgateError('E_INTERNAL', `request parser: ${what} when ${this.#state}`);
    }
  }

  #fail(error: RequestParseError): Fed & { kind: 'error' } {
    this.#state = 'failed';
    return { kind: 'error', error };
  }

  #begin(): void {
    if (this.#refused !== null) return;
    this.#inHead = true;
    this.#sink.messageBegin();
  }

  #pieces(fields: string[], url: string): void {
    // Past the cap only the count matters: nothing more is kept (node:http stops there too).
    if (this.#given <= 2 * MAX_FIELDS) this.#fields.push(...fields);
    this.#given += fields.length;
    // The binding repeats the head's target with trailers: only a head's pieces are its own.
    if (this.#inHead) this.#url += url;
  }

  #head(
    versionMajor: number,
    versionMinor: number,
    fields: string[] | undefined,
    method: number,
    url: string | undefined,
    upgrade: boolean,
    shouldKeepAlive: boolean,
  ): number {
    if (this.#refused !== null) return READ_BODY;
    const rawHeaders = fields ?? this.#fields;
    const given = fields?.length ?? this.#given;
    const target = url ?? this.#url;
    this.#reset();
    this.#inHead = false;
    if (this.#tooMany(given)) return READ_BODY;
    this.#sink.head({
      method: METHODS[method] ?? String(method),
      url: target,
      versionMajor,
      versionMinor,
      rawHeaders,
      shouldKeepAlive,
      upgrade,
    });
    this.#upgrade = upgrade;
    return upgrade ? SKIP_BODY_UPGRADE : READ_BODY;
  }

  #end(): void {
    if (this.#refused !== null) return;
    const trailers = this.#fields;
    const given = this.#given;
    this.#reset();
    if (!this.#tooMany(given)) this.#sink.end(trailers);
  }

  #reset(): void {
    this.#fields = [];
    this.#given = 0;
    this.#url = '';
  }

  /** `given`: names and values in the section just read. */
  #tooMany(given: number): boolean {
    if (given <= 2 * MAX_FIELDS) return false;
    this.#refused = requestParseError('HPE_HEADER_OVERFLOW', `more than ${MAX_FIELDS} fields`);
    return true;
  }
}
