import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestGateway } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import { startRecordingUpstream } from '../helpers/recording-upstream.js';
import type { RefusalRecord } from '../../src/journal/records.js';

/**
 * The lean listener's own connection handling (src/ingress/lean/connection.ts), on a gateway
 * with `engine: lean` whatever TRAJGATE_TEST_ENGINE says: pipelined requests answered in order,
 * a head too slow refused 408 and journaled, an idle keep-alive connection closed, and an
 * upload the upstream does not read held back at the agent's socket.
 */
const ok = (body: string) => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
const upstream = await startRecordingUpstream({
  '/a': { answer: ({ socket }) => socket.write(ok('first')) },
  '/b': { answer: ({ socket }) => socket.write(ok('second')) },
  // Reads the head, then nothing: the agent's upload must wait at its own socket.
  '/stall': { early: true, answer: ({ socket }) => socket.pause() },
});
const g = await startTestGateway({
  engine: 'lean',
  network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
  limits: { headerTimeout: '300ms', keepAliveIdle: '300ms', upstreamTimeout: '1s' },
});
afterAll(async () => {
  await g.stop();
  upstream.server.close();
});
const url = (path: string) => `http://127.0.0.1:${upstream.port}${path}`;
const get = (path: string, close = false) =>
  `GET ${url(path)} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;

describe('lean listener connections', () => {
  it('answers pipelined requests in order, each forwarded once', async () => {
    const from = upstream.requests.length;
    const res = await exchange(g.gw.proxy.port, get('/a') + get('/b', true));
    expect(res.closed).toBe(true);
    expect(res.text.indexOf('first')).toBeGreaterThan(0);
    expect(res.text.indexOf('second')).toBeGreaterThan(res.text.indexOf('first'));
    expect(upstream.requests.slice(from).map((r) => r.path)).toEqual(['/a', '/b']);
  });

  it('a head not whole within headerTimeout → 408, journaled', async () => {
    const res = await exchange(g.gw.proxy.port, `GET ${url('/a')} HTTP/1.1\r\nHost: x\r\n`);
    expect(res.status).toBe(408);
    expect(res.closed).toBe(true);
    const refusals = g.records().filter((r): r is RefusalRecord => r.type === 'refusal');
    expect(refusals.at(-1)?.reason).toMatch(/request headers not received in time/);
  });

  it('an idle keep-alive connection is closed after keepAliveIdle', async () => {
    const res = await exchange(g.gw.proxy.port, get('/a'), { timeoutMs: 5_000 });
    expect(res.status).toBe(200);
    // Closed by the gateway, not by the exchange's timeout.
    expect(res.closed).toBe(true);
  });

  it('an upload the upstream does not read stops being read from the agent', async () => {
    const socket = connect({ host: '127.0.0.1', port: g.gw.proxy.port });
    socket.on('error', () => {});
    const size = 256 << 20;
    const piece = Buffer.alloc(1 << 20, 'x');
    let written = 0;
    let answer = '';
    const write = () => {
      while (written < size && !socket.destroyed) {
        written += piece.length;
        if (!socket.write(piece)) return;
      }
    };
    socket.on('drain', write);
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    socket.once('connect', () => {
      socket.write(`PUT ${url('/stall')} HTTP/1.1\r\nHost: x\r\nContent-Length: ${size}\r\n\r\n`);
      write();
    });
    // The upstream never answers: at upstreamTimeout the agent is answered, the upload cut.
    await new Promise<void>((resolve) => socket.once('close', resolve));
    expect(answer).toMatch(/^HTTP\/1\.1 504 /);
    // Without backpressure the whole upload would have gone (loopback takes it in well under
    // upstreamTimeout); with it, what the socket buffers on both sides, a few MiB.
    expect(socket.bytesWritten).toBeLessThan(size / 4);
  });
});
