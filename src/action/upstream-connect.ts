import { connect as netConnect, isIP } from 'node:net';
import type { Socket } from 'node:net';
import { createSecureContext, connect as tlsConnect } from 'node:tls';
import type { ConnectionOptions, SecureContext } from 'node:tls';
import type { buildConnector } from 'undici';
import { TrajgateError } from '../errors.js';
import type { Egress } from './egress.js';

type Connector = buildConnector.connector;
type Done = buildConnector.Callback;

/**
 * Every plain upstream socket reads into this one buffer; what is kept of a read is copied out
 * at its size (a slice of Node's buffer pool when small): the whole read for undici, each body
 * chunk for the lean client (Node's parser copies it). A socket left to itself gets a fresh 64 KiB
 * allocation per read, shrunk after it; until the next GC frees them, those allocations
 * fragment the malloc heap: ~30 MB of RSS under load in bench/proxy. The copy is taken before
 * the next read can land (reads are delivered one at a time on the event loop).
 */
const reads = Buffer.allocUnsafe(64 * 1024);

/**
 * A plain TCP connection to `host:port` (an address: never looked up here) that reads into
 * `reads`: `read` gets each read as a view of it, valid only during the call, and returns false
 * to stop reading until the socket is resumed. `done` gets the socket once connected (see
 * handOver).
 */
export function plainSocket(
  host: string,
  port: number,
  connectTimeout: number,
  read: (view: Buffer, socket: Socket) => boolean,
  done: Done,
): Socket {
  const socket: Socket = netConnect({
    host,
    port,
    onread: { buffer: reads, callback: (n: number) => read(reads.subarray(0, n), socket) },
  });
  handOver(socket, 'connect', connectTimeout, done);
  return socket;
}

/** Each read copied out at its size, for undici, which keeps what it reads. */
const pushCopy = (view: Buffer, socket: Socket): boolean => {
  const chunk = Buffer.allocUnsafe(view.length);
  view.copy(chunk);
  return socket.push(chunk);
};

/** Plain HTTP upstreams for undici: the origin is the address egress checked. */
export function plainConnector(connectTimeout: number): Connector {
  return (opts, callback) =>
    void plainSocket(opts.hostname, Number(opts.port) || 80, connectTimeout, pushCopy, callback);
}

/**
 * TLS to upstreams, the server's certificate verified against `trust` (see upstreamTrust). One
 * context for every connection: building it from ~140 roots costs ~17 ms and ~1 MB per
 * connection otherwise; built at the first one, so a gateway that intercepts nothing starts
 * lighter.
 */
export class UpstreamTls {
  readonly #trust: () => readonly string[];
  #context: SecureContext | undefined;

  constructor(trust: () => readonly string[]) {
    this.#trust = trust;
  }

  /**
   * `tls.connect` options for a connection to `hostname` (a URL's: IPv6 in brackets), checked
   * against the certificate and sent as SNI unless it is an address, offering `alpn`.
   */
  options(hostname: string, alpn: readonly string[]): ConnectionOptions {
    const name = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    return {
      ...(isIP(name) ? {} : { servername: name }),
      secureContext: (this.#context ??= createSecureContext({ ca: [...this.#trust()] })),
      ALPNProtocols: [...alpn],
    };
  }
}

/**
 * A TLS connection to an HTTPS upstream (intercepted TLS): `hostname` (a URL's) is resolved and
 * checked by egress, the server's certificate verified by `tls`; `alpn` the protocols offered.
 * `done` gets the socket once its handshake is done, or the error that came first. undici's
 * connector and the lean client both connect here, so both check the same way.
 */
export function tlsSocket(
  hostname: string,
  port: number,
  connectTimeout: number,
  egress: Egress,
  tls: UpstreamTls,
  alpn: readonly string[],
  done: Done,
): void {
  Promise.resolve(egress.check(hostname, port)).then(
    (check) => {
      if (!check.ok) return done(new TrajgateError('E_EGRESS', check.reason), null);
      const socket = tlsConnect({ host: check.address, port, ...tls.options(hostname, alpn) });
      handOver(socket, 'secureConnect', connectTimeout, done);
    },
    (err: Error) => done(err, null),
  );
}

/** HTTPS upstreams for undici (which speaks HTTP/2 on a socket that negotiated `h2`). */
export function tlsConnector(
  connectTimeout: number,
  egress: Egress,
  tls: UpstreamTls,
  alpn: readonly string[],
): Connector {
  return (opts, callback) =>
    tlsSocket(opts.hostname, Number(opts.port) || 443, connectTimeout, egress, tls, alpn, callback);
}

/** What the lean client is given each read of a connection: see plainSocket. */
export type Read = (view: Buffer) => boolean;

/**
 * How the lean client (H1Pool) opens a connection to `host:port`: `read` gets its reads,
 * `done` the socket once ready (or the error).
 */
export type LeanConnect = (host: string, port: number, read: Read, done: Done) => void;

/** Plain HTTP/1.1 upstreams for the lean client: `host` is the address egress checked. */
export function plainLean(connectTimeout: number): LeanConnect {
  return (host, port, read, done) => void plainSocket(host, port, connectTimeout, read, done);
}

/**
 * HTTPS upstreams over HTTP/1.1 for the lean client: `host` is the URL's name, checked and
 * verified as undici's connections are (tlsSocket). A TLS socket has no `onread`: its reads
 * come as `data`, and a false from `read` pauses it until the client resumes it.
 */
export function tlsLean(connectTimeout: number, egress: Egress, tls: UpstreamTls): LeanConnect {
  return (host, port, read, done) =>
    tlsSocket(host, port, connectTimeout, egress, tls, ['http/1.1'], (...args) => {
      const socket = args[1];
      if (socket !== null) socket.on('data', (chunk: Buffer) => read(chunk) || socket.pause());
      done(...args);
    });
}

/**
 * Gives `socket` to `done` once `ready` fires (connected, or its TLS handshake done), or the
 * error that came first. One that is not ready within `ms` fails with ETIMEDOUT (504). The
 * deadline ends with the connection's setup: a slow answer is left to the headers and body
 * timeouts (`limits.upstreamTimeout`).
 */
function handOver(
  socket: Socket,
  ready: 'connect' | 'secureConnect',
  ms: number,
  done: Done,
): void {
  let callback: Done | null = done;
  const fail = (err: Error) => {
    callback?.(err, null);
    callback = null;
  };
  const expire = () =>
    socket.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' }));
  socket.setNoDelay(true);
  socket.setKeepAlive(true, 60_000);
  socket.setTimeout(ms, expire);
  socket.once('error', fail);
  socket.once(ready, () => {
    // Its listener goes too: a later socket timeout (the lean client's) is no connect's.
    socket.setTimeout(0, expire);
    socket.off('error', fail);
    callback?.(null, socket);
    callback = null;
  });
}
