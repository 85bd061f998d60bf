/**
 * HTTP/2 frames read as the bytes of a connection go by (RFC 9113 § 4.1), for H2Wire: only
 * frame headers, and the few payloads trajgate needs; nothing is parsed twice or copied whole.
 */

const SETTINGS = 0x4;
const RST_STREAM = 0x3;
const GOAWAY = 0x7;
const ACK = 0x1;
/** What every HTTP/2 client sends first (RFC 9113 § 3.4). */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** A GOAWAY longer than this is passed on as it is (nghttp2's are a few dozen bytes). */
const GOAWAY_KEPT = 1024;
/**
 * SETTINGS frames an agent may send on one connection: a client sends one at the start and
 * seldom another; a stream of them is a flood (CVE-2019-9515), whose ACKs nghttp2 queues only
 * until the agent stops reading.
 */
export const MAX_SETTINGS_FRAMES = 100;

/** Where one direction of a connection is: inside a frame header, or its payload. */
class FrameCursor {
  readonly head = Buffer.alloc(9);
  /** Header bytes read so far (9: whole), then payload bytes still to come. */
  have = 0;
  left = 0;

  /** Reads header bytes from `chunk` at `at`; returns where it stopped. */
  protected readHead(chunk: Buffer, at: number): number {
    const n = Math.min(9 - this.have, chunk.length - at);
    chunk.copy(this.head, this.have, at, at + n);
    this.have += n;
    if (this.have === 9) this.left = this.head.readUIntBE(0, 3);
    return at + n;
  }

  get type(): number {
    return this.head[3] as number;
  }
}

/**
 * What the agent sends: its preface first, then frames, of which SETTINGS are counted. Says
 * what is wrong the first time something is, and nothing after.
 */
export class AgentFrames extends FrameCursor {
  #preface = 0;
  #settings = 0;
  #wrong = false;

  /** Reads `chunk`: null while all is well, else why the connection is refused. */
  read(chunk: Buffer): { preface: string } | { flood: string } | null {
    if (this.#wrong) return null;
    let at = 0;
    if (this.#preface < PREFACE.length) {
      const n = Math.min(PREFACE.length - this.#preface, chunk.length);
      if (chunk.compare(PREFACE, this.#preface, this.#preface + n, 0, n) !== 0) {
        this.#wrong = true;
        const got = Buffer.concat([PREFACE.subarray(0, this.#preface), chunk]).subarray(0, 40);
        return { preface: JSON.stringify(got.toString('latin1')) };
      }
      this.#preface += n;
      at = n;
    }
    while (at < chunk.length) {
      if (this.have < 9) {
        at = this.readHead(chunk, at);
        if (this.have < 9) break;
        if (this.type === SETTINGS && ((this.head[4] as number) & ACK) === 0) {
          if (++this.#settings > MAX_SETTINGS_FRAMES) {
            this.#wrong = true;
            return {
              flood: `HTTP/2 SETTINGS flood: more than ${MAX_SETTINGS_FRAMES} SETTINGS frames on one connection (CVE-2019-9515)`,
            };
          }
        }
      }
      const n = Math.min(this.left, chunk.length - at);
      at += n;
      this.left -= n;
      if (this.left === 0) this.have = 0;
    }
    return null;
  }

  /** Whether the agent was refused (nothing more of it is passed on). */
  get wrong(): boolean {
    return this.#wrong;
  }
}

/** What nghttp2 decided on its own and sent the agent, which reaches JavaScript no other way. */
export interface SentWatch {
  /**
   * nghttp2 is sending GOAWAY with `code` (a connection error, RFC 9113 § 5.4.1, or trajgate's
   * own). Returns the debug data to send instead of nghttp2's `debug`, or null to keep it.
   */
  goAwaySent(code: number, debug: string): string | null;
  /** nghttp2 is sending RST_STREAM with `code` on `stream`. */
  resetSent(stream: number, code: number): void;
}

/**
 * What nghttp2 sends the agent: RST_STREAM and GOAWAY frames are told to the watch, a GOAWAY is
 * held back until whole so its debug data can be replaced; every other byte goes as it came.
 */
export class SentFrames extends FrameCursor {
  watch: SentWatch | null = null;
  /** The payload of an RST_STREAM or GOAWAY being sent, kept whole (null for other frames). */
  #kept: Buffer[] | null = null;
  #keptLength = 0;
  /** The frame being sent is a GOAWAY held back until whole. */
  #held = false;

  /**
   * Reads `chunk`; returns what to send now: the bytes as they are, save a header split across
   * writes (sent from its copy once whole) and a GOAWAY, held until whole.
   */
  scan(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    // The start of the bytes passed on as they are.
    let run = 0;
    let at = 0;
    while (at < chunk.length) {
      if (this.have < 9) {
        const start = at;
        const had = this.have;
        at = this.readHead(chunk, at);
        if (this.have < 9) {
          if (start > run) out.push(chunk.subarray(run, start));
          return out;
        }
        this.#begin();
        if (had > 0 || this.#held) {
          if (start > run) out.push(chunk.subarray(run, start));
          if (!this.#held) out.push(Buffer.from(this.head));
          run = at;
        }
      }
      const n = Math.min(this.left, chunk.length - at);
      if (this.#kept !== null && n > 0) {
        this.#kept.push(Buffer.from(chunk.subarray(at, at + n)));
        this.#keptLength += n;
      }
      at += n;
      this.left -= n;
      if (this.#held) run = at;
      if (this.left === 0) {
        const whole = this.#framed();
        if (whole !== null) out.push(whole);
        this.have = 0;
      }
    }
    if (run < chunk.length) out.push(chunk.subarray(run));
    return out;
  }

  /** A frame's header is whole: what of it to keep and whether to hold it back. */
  #begin(): void {
    this.#held = this.type === GOAWAY && this.left <= GOAWAY_KEPT;
    this.#kept = this.#held || this.type === RST_STREAM ? [] : null;
    this.#keptLength = 0;
  }

  /** A watched frame is whole: tells the watch; returns a held GOAWAY to send, else null. */
  #framed(): Buffer | null {
    if (this.#kept === null) return null;
    const payload = Buffer.concat(this.#kept, this.#keptLength);
    this.#kept = null;
    this.#held = false;
    if (this.type === RST_STREAM) {
      const stream = this.head.readUInt32BE(5) & 0x7fffffff;
      if (payload.length === 4) this.watch?.resetSent(stream, payload.readUInt32BE(0));
      return null;
    }
    if (payload.length < 8) return Buffer.concat([this.head, payload]);
    const debug = this.watch?.goAwaySent(
      payload.readUInt32BE(4),
      payload.subarray(8).toString('latin1'),
    );
    if (debug === null || debug === undefined) return Buffer.concat([this.head, payload]);
    const body = Buffer.concat([payload.subarray(0, 8), Buffer.from(debug)]);
    const head = Buffer.from(this.head);
    head.writeUIntBE(body.length, 0, 3);
    return Buffer.concat([head, body]);
  }
}
