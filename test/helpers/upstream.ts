import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll } from 'vitest';

export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface Upstream {
  readonly port: number;
  readonly url: string;
  /** Every request it received, in order. */
  readonly seen: SeenRequest[];
  /** TCP connections it accepted (a refused address must leave this at zero). */
  connections: number;
}

/**
 * A request's whole body as text (`raw`) and parsed as JSON (`body`, the text itself when it is
 * not JSON). Never settles for a request that does not end.
 */
export function readBody(req: IncomingMessage): Promise<{ raw: string; body: unknown }> {
  return new Promise((resolve) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        // kept as text
      }
      resolve({ raw, body });
    });
  });
}

const TLS_DIR = join(import.meta.dirname, '../fixtures/tls');
export const TEST_CA = readFileSync(join(TLS_DIR, 'ca.pem'));
export const TEST_CA_PATH = join(TLS_DIR, 'ca.pem');

/**
 * A loopback server on port 0 that answers every request 200 with JSON echoing what it got
 * (method, URL, headers, body), so tests can assert what reached the upstream.
 * `tls: true` serves HTTPS with the test CA's certificate for localhost / 127.0.0.1.
 */
export async function startUpstream(options: { tls?: boolean } = {}): Promise<Upstream> {
  const seen: SeenRequest[] = [];
  const handler = (
    req: import('node:http').IncomingMessage,
    res: import('node:http').ServerResponse,
  ) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const record = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(record);
      const text = JSON.stringify(record);
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    });
  };
  const server: Server = options.tls
    ? createHttpsServer(
        {
          key: readFileSync(join(TLS_DIR, 'server-key.pem')),
          cert: readFileSync(join(TLS_DIR, 'server.pem')),
        },
        handler,
      )
    : createServer(handler);
  const upstream: Upstream = { port: 0, url: '', seen, connections: 0 };
  server.on('connection', () => upstream.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  Object.assign(upstream, { port, url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}` });
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return upstream;
}
