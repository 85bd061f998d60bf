import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The ProxyCommand a user's ssh runs to reach the SOCKS listener (test/fixtures). */
export const SOCKS_CONNECT = fileURLToPath(
  new URL('../fixtures/socks-connect.mjs', import.meta.url),
);

/** Listeners on free loopback ports, the SOCKS5 one included. */
export const SOCKS_LISTEN = {
  proxy: '127.0.0.1:0',
  bridge: '127.0.0.1:0',
  admin: '127.0.0.1:0',
  socks: '127.0.0.1:0',
};

/** `host:port` of a gateway's SOCKS5 listener, for curl's `--socks5-hostname`. */
export const socksAt = (g: { gw: { socks: { port: number } | null } }): string =>
  `127.0.0.1:${g.gw.socks?.port}`;

/** What a raw SOCKS exchange got back: the bytes, and whether the server closed. */
export interface SocksRaw {
  readonly socket: Socket;
  readonly got: Buffer;
  readonly closed: boolean;
}

/**
 * Writes `bytes` to 127.0.0.1:`port` (then half-closes when `end`), and reads until `want`
 * bytes came, the server closed, or `ms` passed. Loopback only, bounded in time.
 */
export function socksRaw(
  port: number,
  bytes: Buffer,
  { want = Infinity, end = false, ms = 10_000 }: { want?: number; end?: boolean; ms?: number } = {},
): Promise<SocksRaw> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let got = Buffer.alloc(0);
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.off('data', data);
      socket.off('close', gone);
      resolve({ socket, got, closed });
    };
    const data = (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length >= want) done(false);
    };
    const gone = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    socket
      .on('data', data)
      .once('close', gone)
      .on('error', () => {});
    socket.once('connect', () => (end ? socket.end(bytes) : socket.write(bytes)));
  });
}

/** RFC 1928 § 4 request bytes: CONNECT (or `command`) to a name (ATYP 3). */
export function socksRequest(host: string, port: number, command = 1): Buffer {
  const name = Buffer.from(host);
  return Buffer.concat([
    Buffer.from([5, command, 0, 3, name.length]),
    name,
    Buffer.from([port >> 8, port & 255]),
  ]);
}

/** RFC 1929 § 2 username/password bytes. */
export function socksAuth(user: string, password: string): Buffer {
  const [u, p] = [Buffer.from(user), Buffer.from(password)];
  return Buffer.concat([Buffer.from([1, u.length]), u, Buffer.from([p.length]), p]);
}

/**
 * A SOCKS5 CONNECT to `host:port`, its messages sent at once (a client may): the reply code,
 * and the socket, open on success. `creds`: username/password, else no authentication.
 */
export async function socksTunnel(
  socksPort: number,
  host: string,
  port: number,
  creds?: { user: string; password: string },
): Promise<{ socket: Socket; reply: number | undefined }> {
  const greeting = Buffer.from([5, 1, creds === undefined ? 0 : 2]);
  const auth = creds === undefined ? [] : [socksAuth(creds.user, creds.password)];
  const before = 2 + (creds === undefined ? 0 : 2);
  const r = await socksRaw(
    socksPort,
    Buffer.concat([greeting, ...auth, socksRequest(host, port)]),
    { want: before + 10 },
  );
  return { socket: r.socket, reply: r.got[before + 1] };
}
