import { createRequire } from 'node:module';

/**
 * Node's own llhttp binding, the parser `node:http` runs, taken from `_http_common` as
 * `node:http` takes it: `process.binding('http_parser')` is deprecated (DEP0111) and warns on
 * every run. Its calling conventions are Node 20's src/node_http_parser.cc; this file is the one
 * place that knows them.
 */

/** What `execute` and `finish` return when llhttp refused the bytes. */
interface NativeError extends Error {
  readonly code: string;
  readonly reason: string;
}

/**
 * Called by the binding with the parser as `this`. `headers` (name, value, … as received) and
 * `url` are undefined when they already came in pieces through kOnHeaders: a head split over
 * reads, or more than 32 fields.
 */
export type OnHeadersComplete = (
  versionMajor: number,
  versionMinor: number,
  headers: string[] | undefined,
  method: number,
  url: string | undefined,
  statusCode: undefined,
  statusMessage: undefined,
  upgrade: boolean,
  shouldKeepAlive: boolean,
) => number;

export interface NativeParser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  /** Bytes consumed (all of them, or up to an upgrade), or why llhttp stopped. */
  execute(data: Buffer): number | NativeError;
  /** At end of input: an error when a message was cut short. */
  finish(): NativeError | undefined;
  /** Frees the native parser now (the request parser's close waits a turn; see there). */
  close(): void;
  free(): void;
  [callback: number]: unknown;
}

interface NativeParserClass {
  new (): NativeParser;
  readonly REQUEST: number;
  readonly RESPONSE: number;
  readonly kOnMessageBegin: number;
  readonly kOnHeaders: number;
  readonly kOnHeadersComplete: number;
  readonly kOnBody: number;
  readonly kOnMessageComplete: number;
  readonly kLenientNone: number;
}

const require = createRequire(import.meta.url);
export const { HTTPParser } = require('_http_common') as { HTTPParser: NativeParserClass };

/**
 * What kOnHeadersComplete returns. SKIP_BODY_UPGRADE (llhttp's `2`) makes `execute` stop right
 * after the head, as `node:http` asks for every CONNECT and Upgrade once a server listens for
 * upgrades (the proxy does): what follows belongs to the tunnel, not to the request.
 */
export const READ_BODY = 0;
export const SKIP_BODY_UPGRADE = 2;

/**
 * llhttp's method numbers (`llhttp_method_t`, the order of its HTTP_ALL_METHOD_MAP): the binding
 * gives the number, `node:http` names it from this same list. Numbers 34–45 are PRI and the
 * RTSP methods, which llhttp reads only on `PRI * HTTP/2.0` or an RTSP request line.
 */
export const METHODS: readonly string[] = [
  'DELETE GET HEAD POST PUT CONNECT OPTIONS TRACE COPY LOCK MKCOL MOVE PROPFIND PROPPATCH SEARCH',
  'UNLOCK BIND REBIND UNBIND ACL REPORT MKACTIVITY CHECKOUT MERGE M-SEARCH NOTIFY SUBSCRIBE',
  'UNSUBSCRIBE PATCH PURGE MKCALENDAR LINK UNLINK SOURCE PRI DESCRIBE ANNOUNCE SETUP PLAY PAUSE',
  'TEARDOWN GET_PARAMETER SET_PARAMETER REDIRECT RECORD FLUSH QUERY',
]
  .join(' ')
  .split(' ');

/**
 * A request the parser refused, in the shape `node:http` hands to `clientError` (`code` is
 * llhttp's HPE_*, `reason` its words), so parseErrorProblem answers both engines alike.
 */
export interface RequestParseError extends Error {
  readonly code: string;
  readonly reason: string;
}

/** llhttp's refusal in the shape node:http's clientError gives it (`code`, `reason`). */
export function requestParseError(code: string, reason: string): RequestParseError {
  return Object.assign(new Error(`Parse Error: ${reason}`), { code, reason });
}

/** What the binding returned, as a RequestParseError. */
export const parseErrorOf = (err: NativeError): RequestParseError =>
  requestParseError(err.code, err.reason);
