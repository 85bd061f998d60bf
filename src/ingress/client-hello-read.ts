import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Hello } from '../tls/client-hello.js';
import { MAX_HELLO, parseClientHello, TLS_HANDSHAKE } from '../tls/client-hello.js';

/** What is buffered at most while waiting for a hello (tiny records cost 5 bytes each). */
export const BUFFER_MAX = 2 * MAX_HELLO;

/** What the client's first bytes through a tunnel were (blind, or one trajgate intercepts), left unread. */
export type First =
  | Hello
  | { readonly kind: 'not-tls' }
  | { readonly kind: 'server-first' }
  | { readonly kind: 'closed' }
  | { readonly kind: 'timeout' };

/**
 * The client's first bytes through the tunnel: a ClientHello read whole (it may span records
 * and TCP segments), or what came instead. Whatever was read is put back unread for the relay.
 * An upstream that speaks (or closes) before the client sent anything ends the wait (none for
 * an intercepted tunnel, whose server is trajgate).
 */
export function readClientHello(
  client: Duplex,
  upstream: Socket | null,
  ms: number,
): Promise<First> {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    const ignore = () => {};
    const done = (first: First) => {
      clearTimeout(timer);
      client.off('readable', readable).off('end', closed).off('close', closed).off('error', ignore);
      upstream?.off('readable', spoke).off('error', ignore);
      if (got.length > 0 && !client.destroyed) client.unshift(got);
      resolve(first);
    };
    const readable = () => {
      for (let chunk: Buffer | null; (chunk = client.read() as Buffer | null) !== null;) {
        got = Buffer.concat([got, chunk]);
      }
      if (got.length === 0) return;
      if (got[0] !== TLS_HANDSHAKE) return done({ kind: 'not-tls' });
      const hello = parseClientHello(got);
      if (hello.kind !== 'more') return done(hello);
      if (got.length > BUFFER_MAX) done(hello);
    };
    const spoke = () => {
      if (got.length === 0) done({ kind: 'server-first' });
    };
    const closed = () => done({ kind: 'closed' });
    const timer = setTimeout(() => done({ kind: 'timeout' }), ms);
    client.on('readable', readable).once('end', closed).once('close', closed).on('error', ignore);
    upstream?.on('readable', spoke).on('error', ignore);
    if (client.destroyed) closed();
    else readable();
  });
}
