import type { TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import type { TunnelRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { handshakeThrough, makeLocalCa, startInterceptGateway } from '../helpers/tls.js';
import { roundTrip } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Intercepted TLS connections follow their session like blind tunnels: a paused session's
 * CONNECT to an intercepted host gets no 200 and no handshake; an open one stops being read
 * and answered while paused, resumes on resume, closes on deny. Loopback only.
 */
const ca = makeLocalCa();
const up = await startUpstream({ tls: true });
const stranger = await startUpstream();
const UP = `127.0.0.1:${up.port}`;
const SESSION = '127.0.0.1';

let gateway: TestGateway | undefined;
const sockets: TLSSocket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await gateway?.stop();
  gateway = undefined;
});

async function start(policy: Record<string, unknown>): Promise<TestGateway> {
  gateway = await startInterceptGateway({
    ca,
    intercept: [UP],
    allow: [`GET https://${UP}/`],
    ports: [up.port, stranger.port],
    policy,
  });
  return gateway;
}

async function pauseSession(g: TestGateway): Promise<void> {
  await curl(['-x', g.proxyUrl, `${stranger.url}/one`]);
  void curl(['-x', g.proxyUrl, `${stranger.url}/two`]);
  await waitFor(() => g.gw.sessions.isPaused(SESSION));
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: ${UP}\r\n\r\n`;
const answered = (got: string) => /\r\n\r\n\{.*\}$/s.test(got);

async function openIntercepted(g: TestGateway): Promise<TLSSocket> {
  const h = await handshakeThrough(g.gw.proxy.port, UP, { ca: ca.pem });
  if (!h.ok) throw new Error(h.error);
  sockets.push(h.socket);
  const r = await roundTrip(h.socket as never, get('/first'), answered);
  expect(r.got).toMatch(/^HTTP\/1\.1 200 /);
  return h.socket;
}

describe('intercepted TLS follows the session', () => {
  it('paused: the CONNECT is held (no 200, no handshake) until resume', async () => {
    const g = await start({ pause: 'hold', holdTimeout: '30s' });
    await pauseSession(g);
    const pending = handshakeThrough(g.gw.proxy.port, UP, { ca: ca.pem }, 10_000);
    await waitFor(() => g.gw.sessions.held(SESSION).some((h) => h.what === `CONNECT ${UP}`));
    g.gw.sessions.resume(SESSION, { reset: true });
    const h = await pending;
    expect(h.ok).toBe(true);
    if (h.ok) sockets.push(h.socket);
  });

  it('paused: a held intercepted CONNECT is refused 403 on deny', async () => {
    const g = await start({ pause: 'hold', holdTimeout: '30s' });
    await pauseSession(g);
    const pending = handshakeThrough(g.gw.proxy.port, UP, { ca: ca.pem }, 10_000);
    await waitFor(() => g.gw.sessions.held(SESSION).some((h) => h.what === `CONNECT ${UP}`));
    g.gw.sessions.deny(SESSION);
    const h = await pending;
    expect(h).toMatchObject({ ok: false, status: 403 });
  });

  it('an open connection is frozen by a pause and thawed by resume', async () => {
    const g = await start({ pause: 'block' });
    const socket = await openIntercepted(g);
    await pauseSession(g);
    await waitFor(() => g.records().some((r) => r.type === 'tunnel' && r.change === 'frozen'));
    const seen = up.seen.length;
    const quiet = await roundTrip(socket as never, get('/while-paused'), answered, 400);
    expect(quiet.got).toBe('');
    expect(up.seen.length).toBe(seen);
    g.gw.sessions.resume(SESSION, { reset: true });
    const r = await roundTrip(socket as never, '', answered);
    expect(r.got).toMatch(/^HTTP\/1\.1 200 /);
    expect(up.seen.at(-1)?.url).toBe('/while-paused');
    const changes = g
      .records()
      .filter((x): x is TunnelRecord => x.type === 'tunnel')
      .map((x) => [x.change, x.target, x.rid]);
    // No `rid`: an intercepted connection has no event of its own, its requests do.
    expect(changes).toEqual([
      ['frozen', UP, undefined],
      ['thawed', UP, undefined],
    ]);
  });

  it('deny closes an open intercepted connection', async () => {
    const g = await start({ pause: 'block' });
    const socket = await openIntercepted(g);
    await pauseSession(g);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    g.gw.sessions.deny(SESSION);
    await closed;
    const tunnels = g.records().filter((x): x is TunnelRecord => x.type === 'tunnel');
    expect(tunnels.at(-1)).toMatchObject({
      change: 'closed',
      target: UP,
      reason: 'denied by an operator',
    });
  });
});
