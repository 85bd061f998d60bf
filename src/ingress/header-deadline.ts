import type { Socket } from 'node:net';

/**
 * Request-header deadlines for connections handed to an HTTP server that does not listen
 * (Node enforces `headersTimeout` only on a listening server). Each watched socket must
 * complete a request head within `ms`: from the handshake, and between requests from the
 * first byte of the next head (seen within a tick). A socket that sent nothing since its last
 * response is idle, the server's keep-alive timeout to close (limits.keepAliveIdle).
 */
export class HeaderDeadlines {
  readonly #ms: number;
  readonly #late: (socket: Socket) => void;
  readonly #watched = new Map<Socket, { until: number; bytes: number; first: boolean }>();
  #timer: NodeJS.Timeout | null = null;

  constructor(ms: number, late: (socket: Socket) => void) {
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
      // Idle between requests: the next head's clock has not started.
      if (!w.first && socket.bytesRead === w.bytes) w.until = now + this.#ms;
      if (w.until > now) continue;
      this.clear(socket);
      // Nothing at all after the handshake still counts: the tunnel was opened for a request.
      this.#late(socket);
    }
  }
}
