import { readFileSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import type { Http2SecureServer, ServerHttp2Stream } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { Egress } from '../../src/action/egress.js';
import type { H2Handler } from '../../src/action/h2-exchange.js';
import { H2Upstream } from '../../src/action/h2-upstream.js';
import { tlsConnector, UpstreamTls } from '../../src/action/upstream-connect.js';
import { Agent } from '../../src/undici.js';
import { fixture } from '../helpers/tls.js';
import { waitFor } from '../helpers/wait.js';

/**
 * H2Upstream against real loopback servers with the test certificate: what undici's HTTP/2
 * client got wrong (trailers ahead of held DATA, a connection per POST), its HTTP/1.1
 * fallback, and its timer that counts the upstream's silence only.
 */
const egress = new Egress({ allowPrivate: ['127.0.0.0/8'], timeoutMs: 5_000 });
const trust = new UpstreamTls(() => [readFileSync(fixture('ca.pem'), 'utf8')]);
const fallback = new Agent({ connect: tlsConnector(5_000, egress, trust, ['http/1.1']) });
const upstream = new H2Upstream(tlsConnector(5_000, egress, trust, ['h2', 'http/1.1']), fallback);
afterAll(() => Promise.all([upstream.close(), fallback.close()]));
const tls = {
  cert: readFileSync(fixture('server.pem')),
  key: readFileSync(fixture('server-key.pem')),
};

async function h2Server(onStream: (s: ServerHttp2Stream) => void): Promise<Http2SecureServer> {
  const server = createSecureServer(tls);
  server.on('stream', onStream);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return server;
}
const originOf = (server: { address(): unknown }) =>
  `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

/** A handler that records what it is told; `hold`: every chunk pauses the stream a turn. */
function recorder(options: { hold?: boolean; frozen?: boolean } = {}) {
  const seen = {
    status: 0,
    bytes: 0,
    bytesAtEnd: -1,
    trailers: [] as string[],
    error: null as Error | null,
    done: false,
  };
  const handler: H2Handler & { frozen: boolean; resume?: () => void } = {
    frozen: options.frozen ?? false,
    onConnect: () => {},
    onHeaders(status, _headers, resume) {
      seen.status = status;
      this.resume = resume;
      return true;
    },
    onData(chunk) {
      seen.bytes += chunk.length;
      if (!options.hold) return true;
      setImmediate(() => handler.resume?.());
      return false;
    },
    onComplete(trailers) {
      seen.bytesAtEnd = seen.bytes;
      seen.trailers = (trailers ?? []).map(String);
      seen.done = true;
    },
    onError(err) {
      seen.error = err;
      seen.done = true;
    },
  };
  return { seen, handler };
}

const request = (origin: string, extra: Partial<Parameters<H2Upstream['dispatch']>[0]> = {}) => ({
  origin,
  path: '/',
  method: 'GET',
  headers: ['host', origin.slice('https://'.length)],
  body: null,
  idleTimeout: 0,
  ...extra,
});

describe('H2Upstream', () => {
  it('trailers come after every DATA frame, though the handler holds the stream at each chunk', async () => {
    const server = await h2Server((s) => {
      s.respond({ ':status': 200 }, { waitForTrailers: true });
      s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
      for (let i = 0; i < 6; i++) s.write(Buffer.alloc(10_000, i));
      s.end();
    });
    const { seen, handler } = recorder({ hold: true });
    upstream.dispatch(request(originOf(server)), handler);
    await waitFor(() => seen.done);
    expect(seen.error).toBeNull();
    expect(seen).toMatchObject({ status: 200, bytesAtEnd: 60_000 });
    expect(seen.trailers).toEqual(['grpc-status', '0']);
  });

  it('DATA that arrives with its HEADERS is told after the headers, for each of many answers', async () => {
    // A small answer is one write: HEADERS and DATA in the same read by the client.
    const server = await h2Server((s) => {
      s.respond({ ':status': 201 });
      s.end('small');
    });
    const order: string[][] = [];
    const calls = Array.from({ length: 300 }, () => {
      const { seen, handler } = recorder();
      const told: string[] = [];
      order.push(told);
      const { onHeaders, onData } = handler;
      handler.onHeaders = (...args) => (told.push('headers'), onHeaders.apply(handler, args));
      handler.onData = (chunk) => (told.push('data'), onData.call(handler, chunk));
      upstream.dispatch(request(originOf(server)), handler);
      return seen;
    });
    await waitFor(() => calls.every((c) => c.done));
    expect(calls.every((c) => c.status === 201 && c.bytes === 5 && c.error === null)).toBe(true);
    expect(order.every((told) => told[0] === 'headers')).toBe(true);
  });

  it('concurrent POSTs with bodies share one connection', async () => {
    let sessions = 0;
    const server = await h2Server((s) => {
      let got = 0;
      s.on('data', (d: Buffer) => (got += d.length));
      s.on('end', () => {
        s.respond({ ':status': 200 });
        s.end(String(got));
      });
    });
    server.on('session', () => sessions++);
    const calls = [1, 2, 3].map(() => recorder());
    for (const { handler } of calls) {
      const body = Readable.from([Buffer.alloc(20_000)]);
      upstream.dispatch(request(originOf(server), { method: 'POST', body }), handler);
    }
    await waitFor(() => calls.every((c) => c.seen.done));
    expect(calls.map((c) => [c.seen.status, c.seen.bytes, c.seen.error])).toEqual([
      [200, 5, null],
      [200, 5, null],
      [200, 5, null],
    ]);
    expect(sessions).toBe(1);
  });

  it('an upstream that offers only HTTP/1.1 is served through the fallback', async () => {
    const seen: string[] = [];
    const server = createHttpsServer(tls, (req, res) => {
      seen.push(`${req.method} ${req.url} ${req.httpVersion}`);
      res.end('h1');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    afterAll(() => new Promise<void>((r) => server.close(() => r())));
    for (const path of ['/one', '/two']) {
      const { seen: got, handler } = recorder();
      upstream.dispatch(request(originOf(server), { path }), handler);
      await waitFor(() => got.done);
      expect([got.status, got.bytes, got.error]).toEqual([200, 2, null]);
    }
    expect(seen).toEqual(['GET /one 1.1', 'GET /two 1.1']);
  });

  it('idleTimeout counts the upstream silence, not while the flow is frozen', async () => {
    const waiting: ServerHttp2Stream[] = [];
    const server = await h2Server((s) => waiting.push(s));
    const frozen = recorder({ frozen: true });
    upstream.dispatch(request(originOf(server), { idleTimeout: 200 }), frozen.handler);
    await waitFor(() => waiting.length === 1);
    // A live request sent after it times out: the frozen one has waited longer than that.
    const live = recorder();
    upstream.dispatch(request(originOf(server), { idleTimeout: 200 }), live.handler);
    await waitFor(() => live.seen.done);
    expect(live.seen.error?.name).toBe('HeadersTimeoutError');
    expect(frozen.seen.done).toBe(false);
    waiting[0]?.respond({ ':status': 204 });
    waiting[0]?.end();
    await waitFor(() => frozen.seen.done);
    expect([frozen.seen.status, frozen.seen.error]).toEqual([204, null]);
  });
});
