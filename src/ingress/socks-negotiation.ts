import type { Socket } from 'node:net';
import type { Bad, Parsed } from './socks-wire.js';

/** A message read whole, a wrong one, or none: the deadline passed, or the client closed. */
export type Got<T> =
  | Extract<Parsed<T>, { kind: 'ok' }>
  | Bad
  | { readonly kind: 'timeout' }
  | { readonly kind: 'closed' };

/** Buffered while negotiating before reading stops: past every SOCKS5 message's size. */
const BUFFER_MAX = 4 * 1024;

/**
 * Reads a SOCKS5 client's messages before its tunnel opens, all of them within one deadline
 * (`limits.headerTimeout`, as a request head on the proxy). A client may send ahead (its
 * request, even tunnel bytes, before the replies): what was read past a message waits for the
 * next, and what is left at `finish` is given back to the socket for the tunnel.
 */
export class Negotiation {
  #buf = Buffer.alloc(0);
  #wake: (() => void) | null = null;
  #state: 'reading' | 'timeout' | 'closed' = 'reading';
  readonly #timer: NodeJS.Timeout;

  constructor(
    private readonly socket: Socket,
    ms: number,
  ) {
    this.#timer = setTimeout(() => this.#stop('timeout'), ms);
    socket.on('data', this.#data).once('end', this.#closed).once('close', this.#closed);
  }

  /** The next message whole, or why it did not come. */
  async read<T>(parse: (buf: Buffer) => Parsed<T>): Promise<Got<T>> {
    for (;;) {
      const parsed = parse(this.#buf);
      if (parsed.kind === 'ok') {
        this.#buf = this.#buf.subarray(parsed.used);
        return parsed;
      }
      if (parsed.kind === 'bad') return parsed;
      if (this.#state !== 'reading') return { kind: this.#state };
      this.socket.resume();
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** Stops reading and the clock; unread bytes go back to the socket. */
  finish(): void {
    clearTimeout(this.#timer);
    const { socket } = this;
    socket.off('data', this.#data).off('end', this.#closed).off('close', this.#closed);
    socket.pause();
    if (this.#buf.length > 0 && !socket.destroyed) socket.unshift(this.#buf);
    this.#buf = Buffer.alloc(0);
  }

  readonly #data = (chunk: Buffer): void => {
    this.#buf = Buffer.concat([this.#buf, chunk]);
    if (this.#buf.length >= BUFFER_MAX) this.socket.pause();
    this.#woken();
  };

  readonly #closed = (): void => this.#stop('closed');

  #stop(state: 'timeout' | 'closed'): void {
    if (this.#state === 'reading') this.#state = state;
    this.#woken();
  }

  #woken(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}
