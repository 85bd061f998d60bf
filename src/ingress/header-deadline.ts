import type { Socket } from 'node:net';

/**
 * Request-header deadlines for connections handed to an HTTP server that does not listen
 * (Node enforces `headersTimeout` only on a listening server). Each watched socket must
 * complete a request head within `ms`; a socket that sent nothing since its last response
 * is merely idle and is closed quietly, one that sent part of a head is a slow client.
 */
export class HeaderDeadlines {
  readonly #ms: number;
  readonly #late: (socket: Socket, partial: boolean) => void;
  readonly #watched = new Map<Socket, { until: number; bytes: number; first: boolean }>();
  #timer: NodeJS.Timeout | null = null;

  constructor(ms: number, late: (socket: Socket, partial: boolean) => void) {
    this.#ms = ms;
    this.#late = late;
  }

  /** Starts the clock: after the handshake (`first`) or after a response, for the next head. */
  watch(socket: Socket, first: boolean): void {
    if (socket.destroyed) return;
    this.#watched.set(socket, { until: Date.now() + this.#ms, bytes: socket.bytesRead, first });
    this.#timer ??= setInterval(() => this.#tick(), Math.min(250, this.#ms)).unref();
  }

  /** A head arrived (or the socket closed): no deadline until the response is done. */
  clear(socket: Socket): void {
    this.#watched.delete(socket);
    if (this.#watched.size === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }

  /** Closes the sockets idle between requests (at a drain): nothing read since a response. */
  closeIdle(): void {
    for (const [socket, w] of this.#watched) {
      if (w.first || socket.bytesRead > w.bytes) continue;
      this.clear(socket);
      socket.destroy();
    }
  }

  #tick(): void {
    const now = Date.now();
    for (const [socket, w] of this.#watched) {
      if (w.until > now) continue;
      this.clear(socket);
      // Nothing at all after the handshake still counts: the tunnel was opened for a request.
      this.#late(socket, w.first || socket.bytesRead > w.bytes);
    }
  }
}
