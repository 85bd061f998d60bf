import { readFileSync } from 'node:fs';
import { connect, constants, createSecureServer } from 'node:http2';
import type {
  ClientHttp2Session,
  Http2ServerRequest,
  Http2ServerResponse,
  IncomingHttpHeaders,
  OutgoingHttpHeaders,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll } from 'vitest';
import { fixture, handshakeThrough } from './tls.js';

/** What an upstream received: the HTTP version it was spoken in, and the body. */
export interface H2Seen {
  readonly method: string;
  readonly url: string;
  readonly httpVersion: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface H2Upstream {
  readonly port: number;
  readonly authority: string;
  readonly seen: H2Seen[];
  /** Answers to `/stream…` requests, head and `first\n` sent, left open for the test to write. */
  readonly streams: Http2ServerResponse[];
}

/**
 * An HTTP/2-only TLS server on 127.0.0.1 port 0 (`allowHTTP1: false`, the test CA's
 * certificate): echoes each request as JSON, as startUpstream does, with its `httpVersion`;
 * a path under `/stream` gets its head and a first chunk and stays open in `streams`.
 */
export async function startH2Upstream(): Promise<H2Upstream> {
  const up: H2Upstream = { port: 0, authority: '', seen: [], streams: [] };
  const server = createSecureServer(
    {
      key: readFileSync(fixture('server-key.pem')),
      cert: readFileSync(fixture('server.pem')),
      allowHTTP1: false,
    },
    (req: Http2ServerRequest, res: Http2ServerResponse) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        const seen = {
          method: req.method,
          url: req.url,
          httpVersion: req.httpVersion,
          headers: req.headers,
          body,
        };
        up.seen.push(seen);
        if (req.url.startsWith('/stream')) {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('first\n');
          up.streams.push(res);
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(seen));
      });
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  Object.assign(up, { port, authority: `127.0.0.1:${port}` });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return up;
}

/**
 * Node's HTTP/2 client over a CONNECT to the proxy and a TLS handshake inside offering only
 * `h2` by ALPN, trusting `ca`: the session (with the TLS socket under it) once it is set up.
 */
export async function h2Through(
  proxyPort: number,
  authority: string,
  ca: string,
): Promise<{ session: ClientHttp2Session; socket: TLSSocket }> {
  const hs = await handshakeThrough(proxyPort, authority, { ca, ALPNProtocols: ['h2'] });
  if (!hs.ok) throw new Error(`CONNECT ${authority}: ${hs.error}`);
  if (hs.socket.alpnProtocol !== 'h2') throw new Error(`ALPN chose ${hs.socket.alpnProtocol}`);
  const session = connect(`https://${authority}`, { createConnection: () => hs.socket });
  session.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    session.once('remoteSettings', () => resolve());
    session.once('close', () => reject(new Error('the session closed before its SETTINGS')));
  });
  return { session, socket: hs.socket };
}

/** A stream's answer: status, headers and body, or how it was reset (RST_STREAM's code). */
export interface H2Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The stream's RST_STREAM code (0 when it ended normally). */
  readonly rstCode: number;
  readonly error?: string;
}

/** One request on `session` (`:method` GET unless given), `body` sent when given. */
export function h2Request(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  body?: string,
): Promise<H2Answer> {
  return new Promise((resolve) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let head: IncomingHttpHeaders = {};
    let text = '';
    let error: string | undefined;
    stream.setEncoding('utf8');
    stream.on('response', (h) => {
      head = h;
      status = Number(h[':status']);
    });
    stream.on('data', (c: string) => (text += c));
    stream.on('error', (err: Error) => (error = err.message));
    stream.on('close', () =>
      resolve({
        status,
        headers: head,
        body: text,
        rstCode: stream.rstCode ?? 0,
        ...(error === undefined ? {} : { error }),
      }),
    );
    if (body !== undefined) stream.end(body);
  });
}

export const { NGHTTP2_CANCEL } = constants;
