import { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type {
  ClientRequest,
  IncomingHttpHeaders,
  IncomingMessage,
  ServerResponse,
} from 'node:http';
import { pipeline, Readable } from 'node:stream';
import type { Transform } from 'node:stream';
import { HOP_BY_HOP } from '../http/hop-by-hop.js';
import httpProxy from 'http-proxy';
import type { Flow } from './flows.js';
import type { Transfer } from './transfer.js';
import { upstreamFailure } from './transfer.js';

/** An upstream failure the caller answers in its own protocol (JSON-RPC or plain HTTP). */
export interface Failure {
  readonly status: 502 | 504;
  readonly reason: string;
}

/** Headers describing a request body's bytes, its encoding or its integrity. */
const BODY_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'content-md5',
  'digest',
  'content-digest',
  'repr-digest',
  'expect',
  'trailer',
];

/**
 * Reads an answer's bytes as they pass to the client (keeping what it needs, bounded), and says
 * once the answer has ended (or was cut) whether it reports a failure.
 */
export interface AnswerWatch {
  chunk(bytes: Buffer): void;
  end(): boolean | Promise<boolean>;
}

/** Picks how to read an answer, from its status and headers. */
export type Watcher = (answer: IncomingMessage) => AnswerWatch;

/**
 * How an answer is passed on instead of as it came: the headers to write, and the steps its
 * body goes through (an error in one cuts the answer: the client's connection is closed).
 */
export interface Gate {
  readonly headers: IncomingHttpHeaders;
  readonly steps: readonly Transform[];
  /** Why the answer was cut by the steps, or null: the transfer's error. */
  readonly refused?: () => string | null;
}

/** Picks the gate of an answer, from its status and headers. */
export type Gater = (answer: IncomingMessage) => Gate;

/** How requests reach the upstream: its time limit, and the CAs that verify an https one. */
export interface Connecting {
  readonly timeoutMs: number;
  /** CAs an https upstream's certificate is verified against (see upstreamTrust). */
  readonly trust: readonly string[];
}

/** A connection pool with its time limit, and the requests under way through it. */
interface Connection {
  readonly agent: Agent;
  readonly timeoutMs: number;
  flying: number;
  retired: boolean;
}

interface Flight {
  readonly body: Buffer | null;
  readonly watcher: Watcher | undefined;
  watch?: AnswerWatch;
  readonly gater?: Gater;
  gate?: Gate;
  bytesDown: number;
  /** Read whole (ReverseProxy.read): at most `max` bytes, handed to `done` once. */
  readonly whole?: { readonly max: number; done(read: Read): void };
}

/** An answer read whole, its body as the upstream sent it (content codings still applied). */
export interface WholeAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** How reading an answer whole ended: the answer, the failure to report, or the client left. */
export type Read =
  | { readonly kind: 'answer'; readonly answer: WholeAnswer }
  | { readonly kind: 'failure'; readonly failure: Failure }
  | { readonly kind: 'gone' };

/**
 * The tool bridge's reverse proxy. http-proxy is unmaintained since 2020, so it stays behind
 * this one module: every error is handled (an unhandled 'error' event would kill the process),
 * the upstream has a timeout, and responses are piped as they come (MCP answers may be
 * Server-Sent Events: nothing is buffered), but for those `read` takes whole, bounded. A request body is the JSON the bridge judged,
 * serialised by it: sent as `application/json` with its length, never the client's bytes.
 */
export class ReverseProxy {
  readonly #proxy: httpProxy;
  readonly #flights = new WeakMap<IncomingMessage, Flight>();
  readonly #upstream: URL;
  #connection: Connection;

  constructor(
    options: {
      upstream: string;
      onePath: boolean;
      forwardAuthorization: boolean;
    } & Connecting,
  ) {
    this.#upstream = new URL(options.upstream);
    this.#connection = this.#connect(options);
    this.#proxy = httpProxy.createProxyServer({
      target: options.upstream,
      ignorePath: options.onePath,
      changeOrigin: true,
      xfwd: false,
    });
    this.#proxy.on('proxyReq', (proxyReq: ClientRequest, req: IncomingMessage) => {
      const flight = this.#flights.get(req);
      proxyReq.removeHeader('proxy-authorization');
      if (!options.forwardAuthorization) proxyReq.removeHeader('authorization');
      // The client's headers about its bytes describe bytes that are not sent.
      for (const name of BODY_HEADERS) proxyReq.removeHeader(name);
      if (flight?.body) {
        proxyReq.setHeader('content-type', 'application/json');
        proxyReq.setHeader('content-length', flight.body.length);
      }
    });
    this.#proxy.on(
      'proxyRes',
      (proxyRes: IncomingMessage, req: IncomingMessage, res: ServerResponse) => {
        const flight = this.#flights.get(req);
        if (flight?.whole) {
          flight.watcher?.(proxyRes);
          return this.#readWhole(proxyRes, flight.whole);
        }
        if (flight) {
          const watch = flight.watcher?.(proxyRes);
          flight.watch = watch;
          proxyRes.on('data', (chunk: Buffer) => {
            flight.bytesDown += chunk.length;
            watch?.chunk(chunk);
          });
        }
        // Connection is hop-by-hop: http-proxy would pass the upstream's on (or add keep-alive),
        // and an explicit field overrides Node's own choice (a drain, a client that closes).
        proxyRes.headers.connection = res.shouldKeepAlive ? 'keep-alive' : 'close';
        if (flight?.gater) this.#gated(proxyRes, res, (flight.gate = flight.gater(proxyRes)));
      },
    );
    // Errors also reach each request's callback below; this listener keeps one from crashing.
    this.#proxy.on('error', () => undefined);
  }

  /** Writes the answer as `gate` says, its body through the gate's steps. */
  #gated(answer: IncomingMessage, res: ServerResponse, gate: Gate): void {
    res.statusCode = answer.statusCode ?? 502;
    if (answer.statusMessage) res.statusMessage = answer.statusMessage;
    for (const [name, value] of Object.entries(gate.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) res.setHeader(name, value);
    }
    res.setHeader('connection', answer.headers.connection ?? 'close');
    // An error anywhere (a step's cut, an upstream gone, a client gone) ends all three.
    pipeline([answer, ...gate.steps, res], () => undefined);
  }

  get upstream(): string {
    return this.#upstream.href;
  }

  /**
   * Requests from now on use `next`'s time limit and trust (a config reload); those under way
   * finish on the old pool, which closes after the last.
   */
  configure(next: Connecting): void {
    const old = this.#connection;
    this.#connection = this.#connect(next);
    old.retired = true;
    if (old.flying === 0) old.agent.destroy();
  }

  #connect({ timeoutMs, trust }: Connecting): Connection {
    const pool = { keepAlive: true, maxSockets: 256 };
    const agent =
      this.#upstream.protocol === 'https:'
        ? new HttpsAgent({ ...pool, ca: [...trust] })
        : new Agent(pool);
    return { agent, timeoutMs, flying: 0, retired: false };
  }

  /**
   * Sends the request on; resolves when the response is done, or with the failure to report.
   * The transfer is `failed` when the upstream failed: no answer, one cut short, or one that
   * `watcher` reads as a failure (the answer passes unchanged and undelayed either way). `flow`:
   * the call's, which a pause freezes and a deny closes.
   */
  forward(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer | null,
    watcher?: Watcher,
    flow?: Flow,
    gater?: Gater,
  ): Promise<{ transfer: Transfer; failure?: Failure }> {
    const flight: Flight = { body, watcher, bytesDown: 0, ...(gater ? { gater } : {}) };
    this.#attach(flow, res);
    const bytesUp = body?.length ?? 0;
    return new Promise((resolve) => {
      res.once('close', () => {
        const refused = flight.gate?.refused?.() ?? null;
        const transfer = {
          status: res.statusCode,
          bytesUp,
          bytesDown: flight.bytesDown,
          ...(refused === null ? {} : { error: refused }),
        };
        const failed = flight.watch?.end() ?? false;
        const done = (f: boolean) =>
          resolve({ transfer: f || refused !== null ? { ...transfer, failed: true } : transfer });
        // A decoded answer's verdict waits for its decoder; a plain one is known now.
        if (typeof failed === 'boolean') done(failed);
        else void failed.then(done);
      });
      this.#send(req, res, flight, gater !== undefined, (failure) => {
        if (res.headersSent) {
          res.destroy();
          resolve({
            transfer: {
              status: res.statusCode,
              bytesUp,
              bytesDown: flight.bytesDown,
              error: failure.reason,
              failed: true,
            },
          });
          return;
        }
        resolve({
          transfer: {
            status: failure.status,
            bytesUp,
            bytesDown: 0,
            error: failure.reason,
            failed: true,
          },
          failure,
        });
      });
    });
  }

  /**
   * Frozen, the answer stays corked with trajgate (the upstream is held back by the pipe's
   * backpressure); closed, the agent's connection and with it the upstream request go.
   */
  #attach(flow: Flow | undefined, res: ServerResponse): void {
    flow?.attach({
      freeze: () => res.socket?.cork(),
      thaw: () => res.socket?.uncork(),
      close: () => res.destroy(),
    });
  }

  /**
   * Sends `flight`'s request through the current pool (released once `res` closes); `failed`
   * hears of an upstream that could not be reached, timed out or broke off. `self`: the answer
   * is read by the proxyRes handler, not piped to `res`.
   */
  #send(
    req: IncomingMessage,
    res: ServerResponse,
    flight: Flight,
    self: boolean,
    failed: (failure: Failure) => void,
  ): void {
    this.#flights.set(req, flight);
    const started = Date.now();
    const connection = this.#connection;
    connection.flying++;
    res.once('close', () => {
      if (--connection.flying === 0 && connection.retired) connection.agent.destroy();
    });
    const { agent, timeoutMs } = connection;
    const buffer = flight.body ? { buffer: Readable.from([flight.body]) } : {};
    const options = { ...buffer, agent, proxyTimeout: timeoutMs, selfHandleResponse: self };
    this.#proxy.web(req, res, options, (err: Error) => {
      const timedOut = Date.now() - started >= timeoutMs;
      failed(
        timedOut
          ? { status: 504 as const, reason: `upstream ${this.#upstream.host} timed out` }
          : upstreamFailure(err, this.#upstream.host),
      );
    });
  }

  /**
   * Sends the request on and reads its answer whole instead of passing it on, at most `max`
   * bytes as sent (a longer one is a failure, 502): the caller answers the client (`res`), and
   * `flow` still freezes and closes what it writes. `watcher` sees the answer's headers first.
   */
  read(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer | null,
    max: number,
    watcher?: Watcher,
    flow?: Flow,
  ): Promise<Read> {
    return new Promise((resolve) => {
      let settled = false;
      const done = (read: Read) => {
        if (!settled) resolve(read);
        settled = true;
      };
      const flight: Flight = { body, watcher, bytesDown: 0, whole: { max, done } };
      this.#attach(flow, res);
      res.once('close', () => done({ kind: 'gone' }));
      this.#send(req, res, flight, true, (failure) => done({ kind: 'failure', failure }));
    });
  }

  #readWhole(answer: IncomingMessage, whole: NonNullable<Flight['whole']>): void {
    const { max, done } = whole;
    const tooLarge = () => {
      const reason = `upstream ${this.#upstream.host} answered more than ${max} bytes`;
      done({ kind: 'failure', failure: { status: 502, reason } });
      answer.destroy();
    };
    if (Number(answer.headers['content-length'] ?? 0) > max) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    answer.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) tooLarge();
      else chunks.push(chunk);
    });
    answer.once('end', () => {
      const { statusCode, headers } = answer;
      done({
        kind: 'answer',
        answer: { status: statusCode ?? 0, headers, body: Buffer.concat(chunks) },
      });
    });
    const cut = {
      status: 502 as const,
      reason: `upstream ${this.#upstream.host} cut its answer short`,
    };
    answer.once('aborted', () => done({ kind: 'failure', failure: cut }));
    answer.once('error', () => done({ kind: 'failure', failure: cut }));
  }

  close(): void {
    this.#proxy.close();
    this.#connection.agent.destroy();
  }
}
