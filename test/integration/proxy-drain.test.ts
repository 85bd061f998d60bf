import { Agent, createServer, request } from 'node:http';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnGateway } from '../helpers/child-gateway.js';
import { readRecords } from '../helpers/gateway.js';
import { connectTunnel, parseHead, roundTrip, startEchoServer } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The built CLI on SIGTERM drains: every response after it says `Connection: close` (proxy,
 * admin, inside a read tunnel), idle keep-alive connections close at once, so a busy
 * keep-alive client stops at its next answer instead of being served until `drainTimeout`;
 * a tunnel still open at the deadline is cut with its outcome journaled, and the exit code
 * says so (docs/proxy.md § Egress safety: 0 drained, 3 cut).
 */
const ADMIN_TOKEN = 'admin-token-0123456789abcdef';

/** Answers at once, but `/hold/…` only when released; remembers every path. */
const seen: string[] = [];
const held = new Map<string, ServerResponse>();
const upstream = createServer((req, res) => {
  const path = req.url ?? '';
  seen.push(path);
  if (path.startsWith('/hold/')) held.set(path, res);
  else res.end('ok\n');
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const up = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
afterAll(() => {
  upstream.closeAllConnections();
  return new Promise<void>((r) => upstream.close(() => r()));
});

const startCli = (extra: Record<string, unknown>) =>
  spawnGateway({ admin: { token: ADMIN_TOKEN }, ...extra });

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  reused: boolean;
  socket: Socket;
}

function get(port: number, path: string, agent: Agent, headers = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          reused: req.reusedSocket,
          socket: req.socket as Socket,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const closed = (socket: Socket) =>
  new Promise<void>((r) => (socket.destroyed ? r() : socket.once('close', () => r())));

/** One whole response read off a raw tunnel (Content-Length framed), or what came before close. */
const answered = (got: string) => {
  const { headers, body } = parseHead(got);
  return got.includes('\r\n\r\n') && body.length >= Number(headers['content-length'] ?? 0);
};

describe('SIGTERM drains keep-alive connections (trajgate start)', () => {
  it('a looping keep-alive client gets Connection: close and stops; idle ones close at once; exit 0', async () => {
    const { cli, journal, proxy, admin } = await startCli({
      network: { allow: [`GET http://${up}/`], allowPrivate: ['127.0.0.1/32'] },
      limits: { drainTimeout: '30s' },
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const adminAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // An operator's idle keep-alive connection to the admin API.
      const idle = await get(admin, '/api/health', adminAgent, {
        authorization: `Bearer ${ADMIN_TOKEN}`,
      });
      expect(idle.headers.connection).toBe('keep-alive');

      // A keep-alive tunnel whose requests trajgate reads (GET is allowed, so it is read).
      const tunnel = await connectTunnel(proxy, up);
      expect(tunnel.status).toBe(200);
      const inside = (path: string) =>
        roundTrip(tunnel.socket, `GET ${path} HTTP/1.1\r\nHost: ${up}\r\n\r\n`, answered);
      expect(parseHead((await inside('/t/1')).got).headers.connection).toBe('keep-alive');
      const tunnelHeld = inside('/hold/tunnel');

      // An agent looping on one keep-alive connection; its sixth request is held upstream.
      const answers: Answer[] = [];
      const loop = (async () => {
        for (let i = 0; ; i++) {
          const path = i === 5 ? '/hold/proxy' : `/loop/${i}`;
          answers.push(await get(proxy, `http://${up}${path}`, agent, { host: up }));
        }
      })().catch((err: NodeJS.ErrnoException) => err.code);
      await waitFor(() => held.has('/hold/proxy') && held.has('/hold/tunnel'));

      const signalled = Date.now();
      cli.child.kill('SIGTERM');
      await cli.waitFor('trajgate: stopping');
      // The idle connection closes at once, while two answers are still to come.
      await closed(idle.socket);
      expect(answers).toHaveLength(5);

      held.get('/hold/proxy')?.end('late\n');
      held.get('/hold/tunnel')?.end('late\n');
      // The loop's next request finds the listener closed: its connection was not reused.
      expect(await loop).toBe('ECONNREFUSED');
      expect(answers.map((a) => a.headers.connection)).toEqual([
        ...Array<string>(5).fill('keep-alive'),
        'close',
      ]);
      expect(answers.slice(1).every((a) => a.reused)).toBe(true);
      expect(answers.at(-1)?.status).toBe(200);
      expect(seen.filter((p) => p.startsWith('/loop/'))).toHaveLength(5);

      const last = await tunnelHeld;
      expect(parseHead(last.got)).toMatchObject({
        status: 200,
        headers: { connection: 'close' },
        body: 'late\n',
      });
      await closed(tunnel.socket);

      expect(await cli.exited).toBe(0);
      expect(Date.now() - signalled).toBeLessThan(5_000); // drainTimeout is 30 s
      expect(cli.output().stderr).toMatch(/trajgate: stopped in \d+ ms; everything drained/);
      const records = readRecords(journal);
      const outcomes = records.filter((r) => r.type === 'outcome');
      for (const path of ['/hold/proxy', '/hold/tunnel']) {
        const event = records.find((r) => r.type === 'event' && r.target.endsWith(path));
        expect(outcomes.find((o) => o.rid === event?.seq)).toMatchObject({ status: 200 });
      }
    } finally {
      agent.destroy();
      adminAgent.destroy();
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });
});

describe('SIGTERM with a tunnel that outlasts the drain', () => {
  it('cuts it at limits.drainTimeout, journals why and its outcome, exits 3 saying so', async () => {
    const echo = await startEchoServer();
    const { cli, journal, proxy } = await startCli({
      network: { allow: [`127.0.0.1:${echo.port}`], allowPrivate: ['127.0.0.1/32'] },
      limits: { drainTimeout: '1s' },
    });
    try {
      const tunnel = await connectTunnel(proxy, `127.0.0.1:${echo.port}`);
      expect(tunnel.status).toBe(200);
      expect((await roundTrip(tunnel.socket, 'ping', (got) => got === 'ping')).got).toBe('ping');

      const signalled = Date.now();
      cli.child.kill('SIGTERM');
      await closed(tunnel.socket);
      expect(Date.now() - signalled).toBeGreaterThanOrEqual(900);
      expect(await cli.exited).toBe(3);
      expect(Date.now() - signalled).toBeLessThan(5_000);
      expect(cli.output().stderr).toMatch(
        /trajgate: stopped in \d+ ms; cut at the drain deadline: 0 request\(s\), 1 tunnel\(s\), 1 connection\(s\); journal synced/,
      );

      const records = readRecords(journal);
      const event = records.find((r) => r.type === 'event');
      expect(event).toMatchObject({ target: `127.0.0.1:${echo.port}`, verdict: 'ALLOW' });
      expect(records.find((r) => r.type === 'tunnel')).toMatchObject({
        rid: event?.seq,
        change: 'closed',
        reason: expect.stringMatching(/cut at the drain deadline/),
      });
      expect(records.find((r) => r.type === 'outcome')).toMatchObject({
        rid: event?.seq,
        status: 200,
        bytesUp: 4,
        bytesDown: 4,
        error: expect.stringMatching(/cut at the drain deadline/),
      });
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });
});
