import { connect } from 'node:net';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Transfer } from './transfer.js';

/** Opens a TCP connection to the checked address, or rejects after `timeoutMs`. */
export function connectUpstream(address: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, noDelay: true });
    const timer = setTimeout(() => {
      const err = Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' });
      socket.destroy();
      reject(err);
    }, timeoutMs);
    socket.once('connect', () => {
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
 * Pipes two sockets byte for byte until either side ends, errs or stays idle for `idleMs`
 * (a stuck tunnel must not pin a slot forever). Resolves with the bytes each way.
 */
export function splice(
  client: Duplex,
  upstream: Socket,
  idleMs: number,
): Promise<Omit<Transfer, 'status'>> {
  return new Promise((resolve) => {
    let error: string | undefined;
    let open = 2;
    const done = () => {
      if (--open > 0) return;
      resolve({
        bytesUp: upstream.bytesWritten,
        bytesDown: upstream.bytesRead,
        ...(error === undefined ? {} : { error }),
      });
    };
    const fail = (why: string) => {
      error ??= why;
      client.destroy();
      upstream.destroy();
    };
    for (const side of [client, upstream] as Duplex[]) {
      side.once('close', done);
      side.on('error', (err: Error) => fail(err.message));
      (side as Socket).setTimeout?.(idleMs, () => fail(`idle for ${idleMs} ms`));
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
}
