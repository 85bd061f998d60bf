import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';

/** EventEmitter's own listener type. */
type Listener = (...args: any[]) => void;

/**
 * A request head as the proxy's forwarding path reads it: what `node:http`'s IncomingMessage
 * has and the lean engine's LeanRequest (ingress/lean/lean-request.ts) builds the same way, so
 * one path judges and forwards both.
 */
export interface AgentHead {
  readonly method?: string | undefined;
  /** The request-target as written. */
  readonly url?: string | undefined;
  readonly httpVersion: string;
  readonly httpVersionMajor: number;
  readonly rawHeaders: string[];
  readonly headers: IncomingHttpHeaders;
  readonly socket: Socket;
}

/**
 * An agent's request with its body: read by 'data'/'end'/'close'/'error' events or by async
 * iteration (with backpressure), paused to stop reading. `complete`: the whole body arrived.
 */
export interface AgentRequest extends AgentHead, AsyncIterable<Buffer> {
  readonly complete: boolean;
  readonly readableEnded: boolean;
  on(event: string, listener: Listener): this;
  once(event: string, listener: Listener): this;
  off(event: string, listener: Listener): this;
  pause(): this;
}

/** What an answer's writer reads of its request (framing, gRPC, content left unread). */
export type AnsweredRequest = Pick<
  AgentRequest,
  'headers' | 'httpVersion' | 'httpVersionMajor' | 'complete'
>;

/**
 * The answer to an AgentRequest: the part of ServerResponse the relay and the refusals use,
 * which LeanResponse (ingress/lean/lean-response.ts) writes byte for byte as node:http does.
 */
export interface AgentAnswer {
  readonly req: AnsweredRequest;
  statusCode: number;
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  readonly writableNeedDrain: boolean;
  readonly destroyed: boolean;
  writeHead(status: number, headers?: OutgoingHttpHeaders | (string | number)[]): this;
  setHeader(name: string, value: string | number | readonly string[]): this;
  write(chunk: Buffer | string): boolean;
  addTrailers(fields: OutgoingHttpHeaders): void;
  end(chunk?: Buffer | string): this;
  destroy(): this;
  /** 100 Continue, once the request was judged (RFC 9110 § 10.1.1). */
  writeContinue(): void;
  once(event: string, listener: Listener): this;
}
