/**
 * A client's WebSocket frames as their payloads read (RFC 6455 § 5.2, § 5.3): every frame a
 * client sends is masked with its own 4-byte key, so the bytes relayed never show a sentinel as
 * written. Streaming: a frame split across chunks is read across them. Control frames are read
 * too (a close reason can carry text).
 */
export class WsUnmask {
  /** Bytes of the frame header read so far (at most 14: 2 + 8 length + 4 key). */
  #head = Buffer.alloc(14);
  #headLen = 0;
  /** Payload bytes left in the current frame, and the position in its key. */
  #left = 0;
  #key = Buffer.alloc(4);
  #at = 0;

  /** The payload bytes in `chunk`, unmasked, in order. */
  write(chunk: Uint8Array): Buffer {
    const out: Buffer[] = [];
    let i = 0;
    while (i < chunk.length) {
      if (this.#left === 0) {
        i = this.#readHead(chunk, i);
        continue;
      }
      const n = Math.min(this.#left, chunk.length - i);
      const payload = Buffer.from(chunk.subarray(i, i + n));
      for (let j = 0; j < n; j++) payload[j]! ^= this.#key[(this.#at + j) & 3]!;
      this.#at = (this.#at + n) & 3;
      this.#left -= n;
      i += n;
      out.push(payload);
    }
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** Reads header bytes from `i`; once whole, starts its payload. Answers where it stopped. */
  #readHead(chunk: Uint8Array, i: number): number {
    const needed = () => {
      if (this.#headLen < 2) return 2;
      const len7 = this.#head[1]! & 0x7f;
      const masked = (this.#head[1]! & 0x80) !== 0 ? 4 : 0;
      return 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + masked;
    };
    while (i < chunk.length && this.#headLen < needed()) this.#head[this.#headLen++] = chunk[i++]!;
    if (this.#headLen < needed()) return i;
    const len7 = this.#head[1]! & 0x7f;
    const ext = len7 === 126 ? 2 : len7 === 127 ? 8 : 0;
    const length =
      ext === 0
        ? len7
        : ext === 2
          ? this.#head.readUInt16BE(2)
          : Number(this.#head.readBigUInt64BE(2));
    const masked = (this.#head[1]! & 0x80) !== 0;
    if (masked) this.#head.copy(this.#key, 0, 2 + ext, 6 + ext);
    else this.#key.fill(0);
    this.#left = length;
    this.#at = 0;
    this.#headLen = 0;
    return i;
  }
}
