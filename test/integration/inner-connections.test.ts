import type { Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { RefusalRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { connectTunnel, parseHead, roundTrip } from '../helpers/raw.js';
import { startRecordingUpstream } from '../helpers/recording-upstream.js';

/**
 * The connections of requests inside a read CONNECT tunnel, on each engine (`engine: lean`
 * serves them with a LeanConnection, `node` with node:http): a head not whole within
 * `headerTimeout` is refused 408 and journaled, an idle keep-alive connection closes after
 * `keepAliveIdle`, and a stop's drain closes one idle between requests at once.
 */
const ok = (body: string) => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
const upstream = await startRecordingUpstream({
  '/a': { answer: ({ socket }) => socket.write(ok('first')) },
});
afterAll(() => upstream.server.close());
const UP = `127.0.0.1:${upstream.port}`;
const KEEP_ALIVE_MS = 1_200;

const start = (engine: 'node' | 'lean', keepAliveMs = KEEP_ALIVE_MS) =>
  startTestGateway({
    engine,
    // A method pattern only: the CONNECT is read, each request in it judged.
    network: { allow: [`GET ${UP}`], allowPrivate: ['127.0.0.1/32'] },
    limits: { headerTimeout: '400ms', keepAliveIdle: `${keepAliveMs}ms`, drainTimeout: '20s' },
  });

/** A read tunnel with one GET answered on it (kept alive), and when its socket closes. */
async function answered(g: TestGateway) {
  const t = await connectTunnel(g.gw.proxy.port, UP);
  expect(t.status).toBe(200);
  const socket: Socket = t.socket;
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
  const whole = (got: string) => got.endsWith('first');
  const r = await roundTrip(socket, `GET /a HTTP/1.1\r\nHost: ${UP}\r\n\r\n`, whole);
  return { socket, head: parseHead(r.got), at: Date.now(), closed };
}

describe.each(['lean', 'node'] as const)('inner connections, engine %s', (engine) => {
  it('a head not whole within headerTimeout → 408, journaled, closed', async () => {
    const g = await start(engine);
    try {
      const t = await connectTunnel(g.gw.proxy.port, UP);
      expect(t.status).toBe(200);
      const before = upstream.requests.length;
      const r = await roundTrip(t.socket, `GET /a HTTP/1.1\r\nHost: ${UP}\r\n`);
      expect(r.closed).toBe(true);
      expect(parseHead(r.got).status).toBe(408);
      const refusals = g.records().filter((x): x is RefusalRecord => x.type === 'refusal');
      expect(refusals.at(-1)).toMatchObject({
        status: 408,
        reason: 'request headers not received in time inside a CONNECT tunnel',
        target: UP,
      });
      expect(upstream.requests.length).toBe(before);
    } finally {
      await g.stop();
    }
  });

  it('an idle keep-alive connection closes after keepAliveIdle, not at the header deadline', async () => {
    const g = await start(engine);
    try {
      const c = await answered(g);
      expect(c.head.status).toBe(200);
      expect(c.head.headers['keep-alive']).toBe('timeout=1');
      const idle = (await c.closed) - c.at;
      expect(idle).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 100);
      expect(idle).toBeLessThan(KEEP_ALIVE_MS + 2_000);
    } finally {
      await g.stop();
    }
  });

  it('a stop closes a connection idle between requests at once, not at drainTimeout', async () => {
    const g = await start(engine, 15_000);
    const c = await answered(g);
    expect(c.head.status).toBe(200);
    const began = Date.now();
    await g.stop();
    // Closed by the drain's start, long before keepAliveIdle (15 s) or drainTimeout (20 s).
    expect((await c.closed) - began).toBeLessThan(3_000);
  });
});
