import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Agent, errors } from 'undici';
import { downstreamResponseHeaders, upstreamRequestHeaders } from './headers.js';
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
 * Bodies stream both ways; nothing is buffered.
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

  async forward(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    address: string,
  ): Promise<Transfer> {
    const port = url.port === '' ? 80 : Number(url.port);
    const upstream = authority(address, port);
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    let bytesUp = 0;
    let bytesDown = 0;
    // Counted as undici pulls it: a 'data' listener would start the stream before undici reads.
    async function* counted(): AsyncGenerator<Buffer> {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        bytesUp += chunk.length;
        yield chunk;
      }
    }
    const abort = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) abort.abort();
    };
    res.once('close', onClose);
    try {
      const up = await this.#agent.request({
        origin: `http://${upstream}`,
        path: url.pathname + url.search,
        method: req.method as string,
        headers: upstreamRequestHeaders(req.rawHeaders, url.host),
        body: hasBody ? Readable.from(counted(), { objectMode: false }) : null,
        signal: abort.signal,
      });
      res.writeHead(up.statusCode, downstreamResponseHeaders(up.headers));
      up.body.on('data', (chunk: Buffer) => (bytesDown += chunk.length));
      await pipeline(up.body, res);
      return { status: up.statusCode, bytesUp, bytesDown };
    } catch (err) {
      if (abort.signal.aborted || err instanceof errors.RequestAbortedError) {
        return {
          status: res.headersSent ? res.statusCode : null,
          bytesUp,
          bytesDown,
          error: 'client closed',
        };
      }
      const failure = upstreamFailure(err, upstream);
      if (res.headersSent) {
        res.destroy();
        return { status: res.statusCode, bytesUp, bytesDown, error: failure.reason };
      }
      sendRefusal(res, plainRefusal(failure.status, failure.reason));
      return { status: failure.status, bytesUp, bytesDown, error: failure.reason };
    } finally {
      res.off('close', onClose);
    }
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}
