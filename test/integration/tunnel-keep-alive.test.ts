import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { fileGateway } from '../helpers/file-gateway.js';
import { connectTunnel, parseHead, roundTrip } from '../helpers/raw.js';
import { handshakeThrough, interceptConfig, makeLocalCa } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * `limits.keepAliveIdle` inside tunnels trajgate reads (plain HTTP in a CONNECT, intercepted
 * TLS), as on the proxy listener: announced in `Keep-Alive: timeout=`, an idle connection closed
 * after it (not at the request-header deadline, nor at a fixed 5 s), and a reload applied from
 * the next response. Loopback upstreams only.
 */
const ADMIN = 'admin-token-0123456789abcdef';
const ca = makeLocalCa();
const plain = await startUpstream();
const secure = await startUpstream({ tls: true });
const PLAIN = `127.0.0.1:${plain.port}`;
const SECURE = `127.0.0.1:${secure.port}`;
// A method pattern makes the CONNECT to PLAIN a tunnel read request by request.
const base = interceptConfig({
  ca,
  intercept: [SECURE],
  allow: [`GET ${PLAIN}`, `GET https://${SECURE}/`],
  ports: [plain.port, secure.port],
});
const config = (keepAliveIdle: string) => ({
  ...base,
  limits: { headerTimeout: '1500ms', keepAliveIdle },
});

type Path = 'read tunnel' | 'intercepted TLS';

/** A whole response: its head, and as many body bytes as its Content-Length says. */
const whole = (got: string): boolean => {
  const { headers, body } = parseHead(got);
  return got.includes('\r\n\r\n') && body.length >= Number(headers['content-length']);
};

/** A tunnel of `path` with one GET answered on it: its socket and the response's head. */
async function answeredIn(port: number, path: Path) {
  let socket: Socket;
  let authority: string;
  if (path === 'read tunnel') {
    const t = await connectTunnel(port, PLAIN);
    expect(t.status).toBe(200);
    ({ socket } = t);
    authority = PLAIN;
  } else {
    const hs = await handshakeThrough(port, SECURE, { ca: ca.pem });
    if (!hs.ok) throw new Error(hs.error);
    socket = hs.socket;
    authority = SECURE;
  }
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
  const r = await roundTrip(socket, `GET /idle HTTP/1.1\r\nHost: ${authority}\r\n\r\n`, whole);
  const answered = Date.now();
  return { socket, head: parseHead(r.got), answered, closed };
}

describe('limits.keepAliveIdle inside tunnels', () => {
  it.each<Path>(['read tunnel', 'intercepted TLS'])(
    '%s: an idle connection is closed after 2500ms, past the 1500ms header deadline, before 5 s',
    async (path) => {
      const f = await fileGateway(ADMIN, config('2500ms'));
      const c = await answeredIn(f.gw.proxy.port, path);
      expect(c.head.status).toBe(200);
      expect(c.head.headers['keep-alive']).toBe('timeout=2');
      const idle = (await c.closed) - c.answered;
      expect(idle).toBeGreaterThanOrEqual(2_400);
      // Well under the 5 s it was fixed at, with room for busy cores.
      expect(idle).toBeLessThan(4_500);
    },
  );

  it('a reload applies to the next response in a tunnel already open, and to new ones', async () => {
    const f = await fileGateway(ADMIN, config('2s'));
    const port = f.gw.proxy.port;
    const before = await answeredIn(port, 'read tunnel');
    expect(before.head.headers['keep-alive']).toBe('timeout=2');
    f.write(config('7s'));
    expect((await f.gw.reload('test')).restartNeeded).toEqual([]);
    const again = await roundTrip(
      before.socket,
      `GET /again HTTP/1.1\r\nHost: ${PLAIN}\r\n\r\n`,
      whole,
    );
    expect(parseHead(again.got).headers['keep-alive']).toBe('timeout=7');
    for (const path of ['read tunnel', 'intercepted TLS'] as const) {
      const c = await answeredIn(port, path);
      expect(c.head.headers['keep-alive'], path).toBe('timeout=7');
      c.socket.destroy();
    }
    before.socket.destroy();
  });
});
