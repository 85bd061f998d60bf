import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { ConnectionOptions } from 'node:tls';
import { TrajgateError } from '../errors.js';
import { moveHandle } from './socket-internals.js';
import type { Flow, FlowControl } from './flows.js';
import type { FirstBytes, Watch } from './relay-direction.js';
import { Direction } from './relay-direction.js';
import type { Transfer } from './transfer.js';

/**
 * Opens a TCP connection to the checked address (with `tls`, a TLS one: ready once its
 * handshake is done and the certificate verified), or rejects after `timeoutMs`, or as soon as
 * `flow` is closed (a revoke, deny or reload while connecting: its reason is the error's).
 */
export function connectUpstream(
  address: string,
  port: number,
  timeoutMs: number,
  flow?: Flow,
  tls?: ConnectionOptions,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket =
      tls === undefined
        ? connect({ host: address, port, noDelay: true })
        : tlsConnect({ host: address, port, ...tls }).setNoDelay(true);
    flow?.attach({
      freeze: () => undefined,
      thaw: () => undefined,
      close: (reason) => {
        clearTimeout(timer);
        socket.destroy();
        reject(new TrajgateError('E_FLOW_CLOSED', reason));
      },
    });
    const timer = setTimeout(() => {
      const err = Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' });
      socket.destroy();
      reject(err);
    }, timeoutMs);
    socket.once(tls === undefined ? 'connect' : 'secureConnect', () => {
      clearTimeout(timer);
      socket.removeListener('error', reject);
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * What the proxy sends first: the CONNECT 200 or an upgrade's 101 to the client (a Buffer keeps
 * latin1 field bytes as they came), and whatever is owed upstream.
 */
export interface Opening {
  toClient: string | Buffer | null;
  toUpstream: readonly (string | Buffer)[];
}

export interface RelayOptions {
  /**
   * Read into a few reused buffers (default). False reads through plain 'data' events, the path
   * taken anyway when this Node's socket internals are not the shape socket-internals.ts expects.
   */
  readonly reuseBuffers?: boolean;
  /** Told of the bytes read from the client as they are relayed up (volume rules). */
  readonly onUp?: (bytes: number) => void;
  /** Looks at the client's first bytes before any is relayed up. */
  readonly firstUp?: FirstBytes;
  /** Looks at every chunk from the client before it is relayed up (sentinels). */
  readonly watchUp?: Watch | null;
}

/**
 * Relays two connected TCP sockets byte for byte until either side errs, both ends close, or
 * the tunnel stays idle for `idleMs` (a stuck tunnel must not pin a slot forever). Resolves with
 * the bytes each way. Neither socket may have been written to before.
 *
 * Why not `pipe()`: a stream socket allocates a fresh 64 KiB buffer for every read, and at a
 * gigabyte a second that garbage is collected in major GCs that stall the whole proxy. Here each
 * direction reads into a few reused buffers (net.Socket's `onread`) and writes them straight
 * on; a buffer the writer still holds is never read into. `onread` can only be given
 * when a socket is made, so each socket's handle moves to a new Socket; the old object stays as
 * a shell tied to it, so the server's connection count and whoever holds it see it close. That
 * move uses Node internals, kept in socket-internals.ts; where they are not as expected, each
 * socket is read through 'data' events instead.
 */
export function relay(
  client: Socket,
  upstream: Socket,
  idleMs: number,
  opening: Opening,
  onOpen?: (control: FlowControl) => void,
  { reuseBuffers = true, onUp, firstUp, watchUp }: RelayOptions = {},
): Promise<Omit<Transfer, 'status'>> {
  if (client.destroyed || upstream.destroyed) {
    // One side went away while the tunnel was being decided or connected.
    client.destroy();
    upstream.destroy();
    return Promise.resolve({ bytesUp: 0, bytesDown: 0, error: 'closed before the relay began' });
  }
  return new Promise((resolve) => {
    const up = new Direction(onUp, firstUp, (why) => fail(why), watchUp ?? undefined);
    const down = new Direction();
    const c = adopt(client, up, reuseBuffers);
    const u = adopt(upstream, down, reuseBuffers);
    up.to = u.socket;
    down.to = c.socket;
    let error: string | undefined;
    let open = 2;
    const fail = (why: string) => {
      error ??= why;
      c.socket.destroy();
      u.socket.destroy();
    };
    const closed = () => {
      if (--open > 0) return;
      resolve({
        bytesUp: up.bytes,
        bytesDown: down.bytes,
        ...(error === undefined ? {} : { error }),
      });
    };
    let frozen = false;
    const sockets = [c.socket, u.socket];
    if (opening.toClient !== null) c.socket.write(opening.toClient);
    for (const chunk of opening.toUpstream) up.write(Buffer.from(chunk));
    for (const [from, to, direction] of [
      [c, u, up],
      [u, c, down],
    ] as const) {
      const socket = from.socket;
      socket.once('close', () => {
        // Closed before its peer's end of stream: nobody is left to answer or to hear.
        if (!from.ended) to.socket.destroy();
        closed();
      });
      socket.on('error', (err: Error) => fail(err.message));
      to.socket.on('drain', () => {
        if (!frozen) socket.resume();
      });
      socket.setTimeout(idleMs, () => fail(`idle for ${idleMs} ms`));
      for (const chunk of from.queued) direction.write(chunk);
      // A half-close passes through (after any bytes held back): the other side may answer.
      const end = () => {
        direction.finish();
        to.socket.end();
      };
      if (from.ended) end();
      else from.onEnd(end);
    }
    onOpen?.({
      // Corked, what was read before the freeze stays with trajgate; paused, nothing more is
      // read. A frozen tunnel is not idle: the hold timeout governs it.
      freeze: () => {
        if (frozen) return;
        frozen = true;
        for (const socket of sockets) {
          socket.pause();
          socket.cork();
          socket.setTimeout(0);
        }
      },
      thaw: () => {
        if (!frozen) return;
        frozen = false;
        for (const socket of sockets) {
          socket.setTimeout(idleMs);
          socket.uncork();
          socket.resume();
        }
      },
      close: fail,
    });
  });
}

interface Adopted {
  socket: Socket;
  /** Bytes the old socket had read but nobody consumed yet. */
  queued: Buffer[];
  /** The peer's end of stream arrived, on the old socket or the new one. */
  ended: boolean;
  onEnd(listener: () => void): void;
}

/**
 * Takes over `old` for the relay: its handle moves to a new Socket that reads through
 * `direction`'s reused buffers, or (`reuseBuffers` false, or internals not as expected) `old`
 * itself is read through 'data' events.
 */
function adopt(old: Socket, direction: Direction, reuseBuffers: boolean): Adopted {
  const queued: Buffer[] = [];
  for (let chunk: Buffer | null; (chunk = old.read() as Buffer | null) !== null;) {
    queued.push(chunk);
  }
  const socket = reuseBuffers
    ? moveHandle(old, { buffer: direction.next, callback: direction.onRead })
    : null;
  return socket === null ? readByEvents(old, direction, queued) : moved(old, socket, queued);
}

/** The public path: `socket` stays, its 'data' events are written on. */
function readByEvents(socket: Socket, direction: Direction, queued: Buffer[]): Adopted {
  // Half-closes pass through, as on the moved socket: the other side may still answer.
  socket.allowHalfOpen = true;
  socket.on('data', (chunk: Buffer) => {
    if (!direction.write(chunk)) socket.pause();
  });
  socket.resume();
  const adopted: Adopted = {
    socket,
    queued,
    ended: socket.readableEnded,
    onEnd: (listener) => socket.once('end', listener),
  };
  adopted.onEnd(() => (adopted.ended = true));
  return adopted;
}

/** `old`'s handle now belongs to `socket`: each closes with the other. */
function moved(old: Socket, socket: Socket, queued: Buffer[]): Adopted {
  socket.once('close', () => old.destroy());
  old.once('close', () => socket.destroy());
  const adopted: Adopted = {
    socket,
    queued,
    ended: old.readableEnded,
    onEnd: (listener) => {
      socket.once('end', listener);
      old.once('end', listener);
    },
  };
  adopted.onEnd(() => (adopted.ended = true));
  // An end of stream the old socket read never reaches the new one, whose reading is then
  // over: it closes once its writing is.
  const readingDone = () => {
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  if (old.readableEnded) readingDone();
  else old.once('end', readingDone);
  return adopted;
}
