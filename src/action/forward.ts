import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
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
 * Forwards a plain HTTP request through a pooled keep-alive undici Agent. The connection goes
 * to the address egress checked, never to a fresh lookup of the name; Host carries the name.
 * The response is written to the agent as undici parses it (dispatch handler: no stream or
 * promise per request), with backpressure; nothing is buffered.
 */
export class Forwarder {
  readonly #agent: Agent;

  constructor(limits: ForwardLimits) {
    this.#agent = new Agent({
      connect: { timeout: limits.connectTimeout },
      headersTimeout: limits.upstreamTimeout,
      bodyTimeout: limits.upstreamTimeout,
      keepAliveTimeout: 4_000,
    });
  }

  forward(req: IncomingMessage, res: ServerResponse, url: URL, address: string): Promise<Transfer> {
    const upstream = authority(address, url.port === '' ? 80 : Number(url.port));
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    let bytesUp = 0;
    async function* counted(): AsyncGenerator<Buffer> {
      // Counted as undici pulls it: a 'data' listener would start the stream before undici reads.
      for await (const chunk of req as AsyncIterable<Buffer>) {
        bytesUp += chunk.length;
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
          res.writeHead(statusCode, downstreamRawHeaders(raw as unknown as Buffer[]));
          res.on('drain', () => resume());
          return true;
        },
        onData(chunk) {
          bytesDown += chunk.length;
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
      this.#agent.dispatch(
        {
          origin: `http://${upstream}`,
          path: url.pathname + url.search,
          method: req.method as Dispatcher.HttpMethod,
          headers: upstreamRequestHeaders(req.rawHeaders, url.host),
          body: hasBody ? Readable.from(counted(), { objectMode: false }) : null,
        },
        handler,
      );
    });
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}
