import type { Socket } from 'node:net';

/** First read buffer of a direction; doubled each time a read fills it, up to MAX_READ. */
const FIRST_READ = 16 * 1024;
const MAX_READ = 1024 * 1024;

/**
 * A look at a direction's first bytes: held back (at most `max`) while it answers `more`, then
 * relayed, or the tunnel is closed with the reason. `final`: no more will come.
 */
export interface FirstBytes {
  readonly max: number;
  look(first: Buffer, final: boolean): 'more' | 'relay' | { readonly close: string };
}

/** Looks at each chunk before it is relayed: a reason closes the relay before it goes. */
export type Watch = (chunk: Uint8Array) => string | null;

/**
 * One direction of the relay: the buffers it reads into and the socket it writes to. A buffer
 * handed to a write is reused once that write is done (write callbacks come in write order),
 * so a bulk transfer cycles through two or three buffers instead of allocating per read.
 */
export class Direction {
  to: Socket | null = null;
  #first: FirstBytes | null;
  #held = Buffer.alloc(0);

  constructor(
    private readonly counted?: (bytes: number) => void,
    first?: FirstBytes,
    private readonly close?: (why: string) => void,
    private readonly watch?: Watch,
  ) {
    this.#first = first ?? null;
  }

  bytes = 0;
  #size = FIRST_READ;
  #filled = false;
  readonly #free: Buffer[] = [];
  readonly #writing: Buffer[] = [];

  /** The buffer for the next read, one size up when the last read filled its buffer. */
  readonly next = (): Buffer => {
    if (this.#filled && this.#size < MAX_READ) this.#size *= 2;
    this.#filled = false;
    let buf = this.#free.pop();
    while (buf !== undefined && buf.length < this.#size) buf = this.#free.pop();
    return buf ?? Buffer.allocUnsafe(this.#size);
  };

  /** Returning false pauses the reading socket until the writer drains. */
  readonly onRead = (n: number, buf: Buffer): boolean => {
    // Looked at first: a copy, so the pooled buffer is free again at once.
    if (this.#first !== null) return this.#look(Buffer.from(buf.subarray(0, n)), false);
    if (this.#stops(buf.subarray(0, n))) return false;
    this.#filled = n === buf.length;
    this.#writing.push(buf);
    this.bytes += n;
    this.counted?.(n);
    return (this.to as Socket).write(buf.subarray(0, n), this.#written);
  };

  /**
   * A chunk not from the pool, no callback: what either side sent before the relay began, or a
   * 'data' event's. Returning false: pause the reading socket until the writer drains.
   */
  write(chunk: Buffer): boolean {
    if (this.#first !== null) return this.#look(chunk, false);
    if (this.#stops(chunk)) return false;
    this.bytes += chunk.length;
    this.counted?.(chunk.length);
    return (this.to as Socket).write(chunk);
  }

  /** The end of stream: bytes held back are looked at a last time. */
  finish(): void {
    if (this.#first !== null && this.#held.length > 0) this.#look(Buffer.alloc(0), true);
  }

  #look(chunk: Buffer, final: boolean): boolean {
    const first = Buffer.concat([this.#held, chunk]);
    const seen = (this.#first as FirstBytes).look(
      first,
      final || first.length >= (this.#first as FirstBytes).max,
    );
    if (seen === 'more') {
      this.#held = first;
      return true;
    }
    this.#first = null;
    this.#held = Buffer.alloc(0);
    if (seen === 'relay') return this.write(first);
    this.close?.(seen.close);
    return false;
  }

  /** Whether the watch closes the relay rather than let `chunk` go (nothing goes after it). */
  #stops(chunk: Uint8Array): boolean {
    const why = this.watch?.(chunk) ?? null;
    if (why === null) return false;
    this.close?.(why);
    return true;
  }

  readonly #written = (): void => {
    const buf = this.#writing.shift();
    if (buf !== undefined && buf.length === this.#size) this.#free.push(buf);
  };
}
