import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import { createSecureContext, connect as tlsConnect, rootCertificates } from 'node:tls';
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
import type { Capture } from './capture.js';
import type { Egress } from './egress.js';
import { downstreamRawHeaders, upstreamRequestHeaders } from './headers.js';
import { plainRefusal, sendRefusal } from './respond.js';
import type { Transfer } from './transfer.js';
import { upstreamFailure } from './transfer.js';

export interface ForwardLimits {
  readonly connectTimeout: number;
  readonly upstreamTimeout: number;
}

/** `host:port` as it appears in a URL: IPv6 in brackets. */
export function authority(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/**
 * Forwards HTTP requests through pooled keep-alive undici Agents. Plain HTTP goes to the
 * address egress checked (origin `http://IP:port`, Host carries the name): never a fresh
 * lookup. HTTPS (intercepted TLS) keeps the name in the origin for SNI and certificate checks,
 * and its connector resolves and checks every new connection the same way, verifying the
 * server's certificate against the system CAs plus `tls.upstreamCa`. Responses are written as
 * undici parses them (dispatch handler: no stream or promise per request), with backpressure.
 */
export class Forwarder {
  readonly #plain: Agent;
  readonly #tls: Agent;

  constructor(limits: ForwardLimits, egress: Egress, upstreamCa: readonly string[] = []) {
    const timeouts = {
      headersTimeout: limits.upstreamTimeout,
      bodyTimeout: limits.upstreamTimeout,
      keepAliveTimeout: 4_000,
    };
    this.#plain = new Agent({ ...timeouts, connect: { timeout: limits.connectTimeout } });
    // One context for every upstream connection: building it from ~140 roots costs ~17 ms
    // and ~1 MB per connection otherwise.
    const secureContext = createSecureContext({ ca: [...rootCertificates, ...upstreamCa] });
    this.#tls = new Agent({
      ...timeouts,
      connect: (opts, callback) => {
        const port = Number(opts.port) || 443;
        egress.check(opts.hostname, port).then(
          (check) => {
            if (!check.ok)
              return callback(Object.assign(new Error(check.reason), { code: 'E_EGRESS' }), null);
            const socket = tlsConnect({
              host: check.address,
              port,
              ...(isIP(opts.hostname) ? {} : { servername: opts.hostname }),
              secureContext,
              ALPNProtocols: ['http/1.1'],
              timeout: limits.connectTimeout,
            });
            socket.once('secureConnect', () => callback(null, socket));
            socket.once('error', (err) => callback(err, null));
            socket.once('timeout', () =>
              socket.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })),
            );
          },
          (err: Error) => callback(err, null),
        );
      },
    });
  }

  forward(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    address: string,
    capture?: Capture,
  ): Promise<Transfer> {
    const tls = url.protocol === 'https:';
    const port = url.port === '' ? (tls ? 443 : 80) : Number(url.port);
    const upstream = tls ? url.host : authority(address, port);
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    let bytesUp = 0;
    async function* counted(): AsyncGenerator<Buffer> {
      // Counted as undici pulls it: a 'data' listener would start the stream before undici reads.
      for await (const chunk of req as AsyncIterable<Buffer>) {
        bytesUp += chunk.length;
        capture?.request(chunk);
        yield chunk;
      }
    }
    return new Promise((resolve) => {
      let bytesDown = 0;
      let status: number | null = null;
      const done = (error?: string) =>
        resolve({ status, bytesUp, bytesDown, ...(error === undefined ? {} : { error }) });
      const handler: Dispatcher.DispatchHandler = {
        onConnect(abort) {
          res.once('close', () => {
            if (!res.writableFinished) abort(new Error('client closed'));
          });
        },
        onHeaders(statusCode, raw, resume) {
          if (statusCode < 200) return true; // informational: the final response follows
          status = statusCode;
          const headers = downstreamRawHeaders(raw as unknown as Buffer[]);
          capture?.responseStart(statusCode, headers);
          res.writeHead(statusCode, headers);
          res.on('drain', () => resume());
          return true;
        },
        onData(chunk) {
          bytesDown += chunk.length;
          capture?.response(chunk);
          return res.write(chunk);
        },
        onComplete() {
          res.end();
          done();
        },
        onError(err) {
          if (res.destroyed && !res.writableFinished) return done('client closed');
          const failure = upstreamFailure(err, upstream);
          if (res.headersSent) {
            res.destroy();
          } else {
            sendRefusal(res, plainRefusal(failure.status, failure.reason));
            status = failure.status;
          }
          done(failure.reason);
        },
      };
      (tls ? this.#tls : this.#plain).dispatch(
        {
          origin: `${url.protocol}//${upstream}`,
          path: url.pathname + url.search,
          method: req.method as Dispatcher.HttpMethod,
          headers: upstreamRequestHeaders(req.rawHeaders, url.host),
          body: hasBody ? Readable.from(counted(), { objectMode: false }) : null,
        },
        handler,
      );
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.#plain.close(), this.#tls.close()]);
  }
}
