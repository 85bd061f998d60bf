import type { AgentAnswer, AgentRequest } from '../http/agent-message.js';
import { Readable } from 'node:stream';
import { Agent } from '../undici.js';
import type { Dispatcher } from 'undici';
import { plainConnector, tlsConnector, tlsLean, UpstreamTls } from './upstream-connect.js';
import { H1Pool } from './h1-pool.js';
import type { Capture } from './capture.js';
import type { CredentialScrubber } from './credential-scrub.js';
import type { Egress } from './egress.js';
import type { Flow } from './flows.js';
import { hasBody, requestHeadLength, upstreamRequestHeaders } from './headers.js';
import { isGrpcCall } from './grpc.js';
import { H2Upstream } from './h2-upstream.js';
import type { BodyWatch, Forwarded } from './response-relay.js';
import { ResponseRelay } from './response-relay.js';

export interface ForwardLimits {
  readonly connectTimeout: number;
  readonly upstreamTimeout: number;
  /** The longest gap allowed while the agent sends a request body (then 408). */
  readonly bodyTimeout: number;
}

/**
 * A request the caller rewrote (credentials swapped in, see credential-swap.ts): its path,
 * headers as upstreamRequestHeaders gives them, and whole body go instead of those Forwarder
 * would build; `scrub` takes the credentials' values out of the answer.
 */
export interface PreparedRequest {
  readonly path: string;
  readonly rawHeaders: readonly string[];
  /** The whole body to send instead (null: none); absent, the agent's goes up as it streams. */
  readonly body?: Buffer | null;
  readonly scrub?: CredentialScrubber;
}

/**
 * What forwards HTTP/1.1, plain and HTTPS: `node`, undici's Agents (the reference); `lean`,
 * H1Pools. HTTP/2 upstreams are node:http2's either way (H2Upstream, whose HTTP/1.1 fallback is
 * undici's).
 */
export type Engine = 'node' | 'lean';

/** `host:port` as it appears in a URL: IPv6 in brackets. */
export function authority(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/**
 * Forwards HTTP requests through pooled keep-alive clients (undici Agents, or H1Pools under
 * `engine: lean`). Plain HTTP goes to the address egress checked (origin `http://IP:port`,
 * Host carries the name): never a fresh lookup. HTTPS (intercepted TLS) keeps the name in the
 * origin for SNI and certificate checks, and one connector (tlsSocket) resolves and checks
 * every new connection the same way for both engines, verifying the server's certificate
 * against `trust` (see upstreamTrust: the machine's CAs plus `tls.upstreamCa`). Responses are
 * written as they are parsed (dispatch handler: no stream or promise per request), with
 * backpressure.
 */
export class Forwarder {
  readonly #plain: Agent;
  /** HTTP/1.1 under `engine: lean`, plain and HTTPS (null: `#plain` and `#tls`). */
  readonly #lean: { readonly plain: H1Pool; readonly tls: H1Pool } | null;
  readonly #tls: Agent;
  /** For HTTP/2 agents: HTTP/2 to upstreams that offer it by ALPN, else HTTP/1.1 (`#tls`). */
  readonly #h2: H2Upstream;
  readonly #bodyTimeout: number;
  /** How its HTTPS connections verify upstreams; upgrades inside intercepted TLS use it too. */
  readonly tls: UpstreamTls;
  readonly #upstreamTimeout: number;

  constructor(
    limits: ForwardLimits,
    egress: Egress,
    trust: () => readonly string[],
    { engine = 'node' }: { engine?: Engine } = {},
  ) {
    const timeouts = {
      headersTimeout: limits.upstreamTimeout,
      bodyTimeout: limits.upstreamTimeout,
      keepAliveTimeout: 4_000,
    };
    this.#bodyTimeout = limits.bodyTimeout;
    this.tls = new UpstreamTls(trust);
    this.#upstreamTimeout = limits.upstreamTimeout;
    this.#plain = new Agent({ ...timeouts, connect: plainConnector(limits.connectTimeout) });
    this.#lean =
      engine === 'lean'
        ? {
            plain: new H1Pool(limits),
            tls: new H1Pool(limits, tlsLean(limits.connectTimeout, egress, this.tls)),
          }
        : null;
    this.#tls = new Agent({
      ...timeouts,
      connect: tlsConnector(limits.connectTimeout, egress, this.tls, ['http/1.1']),
    });
    this.#h2 = new H2Upstream(
      tlsConnector(limits.connectTimeout, egress, this.tls, ['h2', 'http/1.1']),
      this.#tls,
    );
  }

  forward(
    req: AgentRequest,
    res: AgentAnswer,
    url: URL,
    address: string,
    capture: Capture | undefined,
    flow: Flow,
    { prepared, watch }: { prepared?: PreparedRequest; watch?: BodyWatch } = {},
  ): Promise<Forwarded> {
    const tls = url.protocol === 'https:';
    const port = url.port === '' ? (tls ? 443 : 80) : Number(url.port);
    const upstream = tls ? url.host : authority(address, port);
    const whole = prepared?.body;
    const body = whole === undefined ? hasBody(req) : whole !== null;
    const path = prepared?.path ?? url.pathname + url.search;
    const h2 = tls && req.httpVersionMajor === 2;
    const headers =
      prepared === undefined
        ? upstreamRequestHeaders(req.rawHeaders, url.host)
        : whole === undefined
          ? [...prepared.rawHeaders]
          : withLength(prepared.rawHeaders, whole);
    // The one TE an HTTP/2 request may carry (RFC 9113 § 8.2.2); gRPC sends it end to end.
    if (h2 && req.headers.te === 'trailers') headers.push('te', 'trailers');
    // The request line and header section count as sent up (volume rules), as the body does.
    flow.up(requestHeadLength(req.method as string, path, headers));
    return new Promise((resolve) => {
      const relay = new ResponseRelay(
        res,
        upstream,
        capture,
        resolve,
        flow,
        prepared?.scrub,
        watch,
      );
      const stream = body ? relay.requestBody(req, this.#bodyTimeout, whole ?? undefined) : null;
      const method = req.method as Dispatcher.HttpMethod;
      if (!h2 && this.#lean !== null) {
        // HTTPS: the name, which the pool's connector resolves and checks for each connection.
        const to = tls ? url.hostname : address;
        const target = { authority: upstream, address: to, port, method, path, headers };
        return (tls ? this.#lean.tls : this.#lean.plain).dispatch(
          { ...target, body: stream },
          relay,
        );
      }
      const request = {
        origin: `${url.protocol}//${upstream}`,
        path,
        method,
        headers,
        body: stream === null ? null : Readable.from(stream, { objectMode: false }),
      };
      if (!h2) return void (tls ? this.#tls : this.#plain).dispatch(request, relay);
      // A gRPC stream may be quiet for as long as its call lasts: its deadline (`grpc-timeout`)
      // is the client's and the server's to keep.
      const idleTimeout = isGrpcCall(req) ? 0 : this.#upstreamTimeout;
      this.#h2.dispatch({ ...request, idleTimeout }, relay);
    });
  }

  async close(): Promise<void> {
    await Promise.all([
      this.#plain.close(),
      this.#lean?.plain.close(),
      this.#lean?.tls.close(),
      this.#tls.close(),
      this.#h2.close(),
    ]);
  }
}

/** The prepared headers with the length of the prepared body, which is whole (RFC 9110 § 8.6). */
function withLength(headers: readonly string[], body: Buffer | null): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const lower = headers[i]!.toLowerCase();
    if (lower !== 'content-length' && lower !== 'transfer-encoding')
      out.push(headers[i]!, headers[i + 1]!);
  }
  if (body !== null) out.push('content-length', String(body.length));
  return out;
}
