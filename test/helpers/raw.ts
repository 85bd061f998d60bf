import { createServer as createHttpServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { afterAll } from 'vitest';
import { connectHead } from './request-corpus.js';

/** A response read off a raw socket: status line, lower-cased headers, body, and timing. */
export interface RawResponse {
  readonly text: string;
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** The server closed the connection (rather than our timeout). */
  readonly closed: boolean;
  readonly ms: number;
}

export function parseHead(text: string): Omit<RawResponse, 'text' | 'closed' | 'ms'> {
  const end = text.indexOf('\r\n\r\n');
  const head = end < 0 ? text : text.slice(0, end);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(/^HTTP\/1\.[01] (\d{3}) /.exec(statusLine)?.[1] ?? 0);
  return { status, headers, body: end < 0 ? '' : text.slice(end + 4) };
}

/**
 * Writes `chunks` to 127.0.0.1:`port` (`gapMs` apart, stopping once the server closes) and
 * reads until the server closes or `timeoutMs` passes. Loopback only, bounded in time.
 */
export function exchange(
  port: number,
  chunks: string | Buffer | readonly (string | Buffer)[],
  options: { gapMs?: number; timeoutMs?: number } = {},
): Promise<RawResponse> {
  const list = typeof chunks === 'string' || Buffer.isBuffer(chunks) ? [chunks] : chunks;
  const { gapMs = 0, timeoutMs = 5_000 } = options;
  const start = Date.now();
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let data = '';
    let closed = false;
    let timedOut = false;
    let pending: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy();
    }, timeoutMs);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (data += d));
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = !timedOut;
      clearTimeout(timer);
      clearTimeout(pending);
      resolve({ text: data, ...parseHead(data), closed, ms: Date.now() - start });
    });
    let i = 0;
    const next = () => {
      if (socket.destroyed || !socket.writable || i >= list.length) return;
      socket.write(list[i++] as string | Buffer);
      if (i < list.length) pending = setTimeout(next, gapMs);
    };
    socket.once('connect', next);
  });
}

/** A CONNECT (or any request whose answer leaves the socket open) and the response head. */
export interface Tunnel {
  readonly socket: Socket;
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Bytes after the response head that arrived with it. */
  readonly rest: string;
}

/** Sends `head` to the proxy and resolves once a whole response head arrived (or it closed). */
export function openRaw(port: number, head: string, timeoutMs = 5_000): Promise<Tunnel> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setEncoding('latin1');
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response head within ${timeoutMs} ms; got ${JSON.stringify(data)}`));
    }, timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      socket.off('data', onData);
      const end = data.indexOf('\r\n\r\n');
      const parsed = parseHead(data);
      resolve({
        socket,
        status: parsed.status,
        headers: parsed.headers,
        rest: end < 0 ? '' : data.slice(end + 4),
      });
    };
    const onData = (d: string) => {
      data += d;
      if (data.includes('\r\n\r\n')) finish();
    };
    socket.on('data', onData);
    socket.on('error', () => {});
    socket.once('close', () => {
      if (!data.includes('\r\n\r\n')) finish();
    });
    socket.once('connect', () => socket.write(head));
  });
}

/** `CONNECT authority` with optional extra header lines. */
export function connectTunnel(
  proxyPort: number,
  authority: string,
  headers: Record<string, string> = {},
): Promise<Tunnel> {
  return openRaw(proxyPort, connectHead(authority, headers));
}

/** Writes `text` and collects what comes back until `until` matches, the socket closes, or `ms`. */
export function roundTrip(
  socket: Socket,
  text: string,
  until: (got: string) => boolean = () => false,
  ms = 5_000,
): Promise<{ got: string; closed: boolean }> {
  return new Promise((resolve) => {
    let got = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve({ got, closed });
    };
    const onData = (d: Buffer | string) => {
      got += d.toString();
      if (until(got)) done(false);
    };
    const onClose = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    socket.on('data', onData);
    socket.once('close', onClose);
    if (text !== '') socket.write(text);
  });
}

/** A plain loopback TCP server on port 0; counts connections, closes everything after the file. */
export interface TcpServer {
  readonly port: number;
  connections: number;
  /** Connections currently open. */
  open: number;
  readonly server: Server;
}

export async function startTcpServer(onSocket: (socket: Socket) => void): Promise<TcpServer> {
  const sockets = new Set<Socket>();
  const server = createServer();
  const tcp: TcpServer = { port: 0, connections: 0, open: 0, server };
  server.on('connection', (socket: Socket) => {
    tcp.connections++;
    tcp.open++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => {
      tcp.open--;
      sockets.delete(socket);
    });
    onSocket(socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  Object.assign(tcp, { port: (server.address() as AddressInfo).port });
  afterAll(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return tcp;
}

/** Echoes every byte back. */
export function startEchoServer(): Promise<TcpServer> {
  return startTcpServer((socket) => socket.pipe(socket));
}

/** Accepts and reads, never answers. */
export function startSilentServer(): Promise<TcpServer> {
  return startTcpServer((socket) => socket.resume());
}

/**
 * Answers the first request with a head promising `Content-Length: 1000`, sends `partial`
 * bytes of body, then resets the connection (RST).
 */
export function startResettingServer(partial = 'only part of the body'): Promise<TcpServer> {
  return startTcpServer((socket) => {
    let got = '';
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (!got.includes('\r\n\r\n')) return;
      got = '';
      // The reset comes a moment after the partial body (an RST can drop data its peer has
      // not read yet); nothing tells this server when the proxy has read it.
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n${partial}`, () =>
        setTimeout(() => socket.resetAndDestroy(), 50),
      );
    });
  });
}

/** An HTTP server that answers upgrades `101` and then echoes every byte back. */
export interface UpgradeServer {
  readonly port: number;
  readonly upgrades: { url: string; headers: IncomingHttpHeaders }[];
  connections: number;
}

export async function startUpgradeServer(): Promise<UpgradeServer> {
  const server = createHttpServer((_req, res) => res.writeHead(426).end('upgrade required\n'));
  const result: UpgradeServer = { port: 0, upgrades: [], connections: 0 };
  const upgraded = new Set<import('node:stream').Duplex>();
  server.on('connection', () => result.connections++);
  server.on('upgrade', (req, socket, head) => {
    result.upgrades.push({ url: req.url ?? '', headers: req.headers });
    upgraded.add(socket);
    socket.on('error', () => {});
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
    );
    if (head.length > 0) socket.write(head);
    socket.pipe(socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  Object.assign(result, { port: (server.address() as AddressInfo).port });
  afterAll(() => {
    for (const s of upgraded) s.destroy();
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return result;
}

/**
 * A loopback port that refuses connections (ECONNREFUSED) and that nothing else can take
 * until the file's tests are done: the local port of a connected client socket, held open.
 * Unlike a port found free and closed, it cannot be bound by another test meanwhile.
 */
export async function refusingPort(): Promise<number> {
  const accepted: Socket[] = [];
  const server = createServer((s) => accepted.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  // Only the connection holds the port; the listener it came through can go.
  server.close();
  afterAll(() => {
    client.destroy();
    for (const s of accepted) s.destroy();
  });
  return client.localPort as number;
}
