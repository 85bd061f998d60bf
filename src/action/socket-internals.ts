import { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

/**
 * The one place trajgate relies on Node's private socket internals, for the tunnel relay's
 * reused read buffers (see `relay` in tunnel.ts). `onread` is public only for
 * `net.connect()`; a socket the server accepted can read into our buffers only if its libuv
 * handle (`socket._handle`, private) moves to a Socket made with the `handle` option (private,
 * undocumented) and `onread`. Everything here checks that shape first and returns null when it
 * is not what we expect, so the caller reads the socket through its public API instead: slower,
 * still correct. test/unit/socket-internals.test.ts fails loudly when a Node release changes it.
 */

/** Where a socket's reads go instead of 'data' events: the `onread` option's shape. */
export interface ReadInto {
  /** The buffer the next read fills; called without `this`. */
  readonly buffer: () => Buffer;
  /** `n` bytes arrived in `buf`; returning false pauses reading until the socket is resumed. */
  readonly callback: (n: number, buf: Buffer) => boolean;
}

/** A socket as Node builds it today: `_handle` is its libuv stream handle, or null. */
type Shell = Socket & { _handle: unknown };

/** What the moved handle must offer: the calls net.Socket makes on it when it adopts one. */
const HANDLE_METHODS = ['readStart', 'readStop', 'getAsyncId'] as const;

let onreadKept: boolean | undefined;

/**
 * Whether `new Socket({ onread })` keeps the callback (the option is documented for
 * `net.connect()` only): a probe socket with no handle, made once, must hold it.
 */
function constructorKeepsOnread(): boolean {
  if (onreadKept === undefined) {
    const callback = (): boolean => true;
    const probe = new Socket({
      onread: { buffer: Buffer.alloc(1), callback },
    } as ConstructorParameters<typeof Socket>[0]) as unknown as Record<symbol, unknown>;
    onreadKept = Object.getOwnPropertySymbols(probe).some((key) => probe[key] === callback);
  }
  return onreadKept;
}

/**
 * Why `socket`'s handle cannot move to a socket that reads into reused buffers on this Node, or
 * null when it can.
 */
export function whyNoHandleMove(socket: Socket): string | null {
  // Its handle reads TLS records for the TLSSocket to decrypt: moved, the relay would read those.
  if (socket instanceof TLSSocket) return 'a TLS socket reads through its TLS layer';
  if (!constructorKeepsOnread()) return 'new net.Socket() ignores the onread option';
  const handle = (socket as Shell)._handle;
  if (handle === null || typeof handle !== 'object') return 'socket._handle is not an object';
  for (const method of HANDLE_METHODS) {
    if (typeof (handle as Record<string, unknown>)[method] !== 'function') {
      return `socket._handle.${method} is not a function`;
    }
  }
  return null;
}

/**
 * Moves `old`'s handle to a new half-open Socket that reads into `readInto`'s buffers; `old`
 * stays behind as a shell without a handle. Returns null, with `old` untouched, when this Node's
 * sockets do not have the shape this relies on: read `old` through its public API then.
 */
export function moveHandle(old: Socket, readInto: ReadInto): Socket | null {
  if (whyNoHandleMove(old) !== null) return null;
  const shell = old as Shell;
  const handle = shell._handle;
  try {
    shell._handle = null;
  } catch {
    return null;
  }
  if (shell._handle !== null) return null;
  const socket = new Socket({
    handle,
    allowHalfOpen: true,
    onread: readInto,
  } as ConstructorParameters<typeof Socket>[0]);
  if ((socket as Shell)._handle !== handle) {
    // The handle option was ignored: the new socket holds nothing, the handle goes back.
    socket.destroy();
    shell._handle = handle;
    return null;
  }
  return socket;
}
