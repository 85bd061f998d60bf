import { Agent, createServer, request } from 'node:http';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Drain } from '../../src/ingress/drain.js';

/**
 * Drain on a plain Node server on loopback: what the gateway attaches to its proxy, bridge and
 * admin listeners (and, with its own idle closer, to the server inside read tunnels).
 */
let server: Server;
let drain: Drain;
/** Responses the handler keeps open, by path. */
const held = new Map<string, ServerResponse>();
const agents: Agent[] = [];

async function start(): Promise<number> {
  drain = new Drain();
  server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (path.startsWith('/hold') || path.startsWith('/stream')) {
      if (path.startsWith('/stream')) res.writeHead(200, { 'content-length': '4' }).write('ab');
      held.set(path, res);
      return;
    }
    res.end('ok');
  });
  drain.attach(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

afterEach(async () => {
  held.clear();
  for (const a of agents.splice(0)) a.destroy();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

interface Got {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  socket: Socket;
  reused: boolean;
}

function get(port: number, agent: Agent, path: string, onSocket?: (s: Socket) => void) {
  return new Promise<Got>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body,
          socket: req.socket as Socket,
          reused: req.reusedSocket,
        }),
      );
    });
    req.on('socket', (s) => onSocket?.(s as Socket));
    req.on('error', reject);
    req.end();
  });
}

const keepAlive = () => {
  const a = new Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(a);
  return a;
};
const closed = (socket: Socket) =>
  new Promise<void>((r) => (socket.destroyed ? r() : socket.once('close', () => r())));

describe('Drain', () => {
  it('answers the request in flight with Connection: close and closes idle keep-alive at once', async () => {
    const port = await start();
    const busy = keepAlive();
    const idle = keepAlive();
    const first = await get(port, busy, '/a');
    expect(first.headers.connection).toBe('keep-alive');
    const idleOne = await get(port, idle, '/b');
    let busySocket: Socket | undefined;
    const inFlight = get(port, busy, '/hold', (s) => (busySocket = s));
    await waitUntil(() => held.has('/hold'));

    drain.start();
    // The idle connection is closed while the busy one still waits for its answer.
    await closed(idleOne.socket);
    expect(busySocket?.destroyed).toBe(false);

    held.get('/hold')?.end('late');
    const last = await inFlight;
    expect(last.reused).toBe(true);
    expect(last.headers.connection).toBe('close');
    expect(last.body).toBe('late');
    await closed(last.socket);
  });

  it('a response whose head went out before the drain closes its connection once done', async () => {
    const port = await start();
    const agent = keepAlive();
    let socket: Socket | undefined;
    const streaming = get(port, agent, '/stream', (s) => (socket = s));
    await waitUntil(() => held.has('/stream'));
    drain.start();
    held.get('/stream')?.end('cd');
    const got = await streaming;
    expect(got.body).toBe('abcd');
    expect(got.headers.connection).toBe('keep-alive'); // said before the drain
    await closed(socket as Socket);
  });

  it('counts handlers until they settle; cut closes every connection and says what ran', async () => {
    const port = await start();
    let finish: () => void = () => undefined;
    drain.track('tunnel', new Promise<void>((r) => (finish = r)));
    drain.track('request', Promise.reject(new Error('a handler that failed still ends')));
    await new Promise((r) => setImmediate(r));
    expect(drain.running).toEqual({ requests: 0, tunnels: 1 });

    let socket: Socket | undefined;
    void get(port, keepAlive(), '/hold', (s) => (socket = s)).catch(() => undefined);
    await waitUntil(() => held.has('/hold'));
    expect(await drain.settled(10)).toBe(false);
    const settled = drain.settled(5_000);
    expect(drain.cut()).toEqual({ requests: 0, tunnels: 1, connections: 1 });
    await closed(socket as Socket);
    finish();
    expect(await settled).toBe(true);
  });
});

async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setImmediate(r));
}
