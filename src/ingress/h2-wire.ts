import { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { SentWatch } from './h2-frames.js';
import { AgentFrames, SentFrames } from './h2-frames.js';

/**
 * How long, and for how many bytes, a refused or closed connection still reads (and drops)
 * what the agent sends, waiting for its end: a socket closed with bytes unread is reset by the
 * kernel, and a reset can take the last GOAWAY, and its reason, with it. Past either, it is cut.
 */
export const LINGER_MS = 1_000;
const LINGER_BYTES = 64 * 1024;

/** What H2Wire tells of a connection: what nghttp2 sent, and what trajgate refuses first. */
export interface WireWatch extends SentWatch {
  /** The agent's first bytes are not the connection preface: `got`, as far as it differs. */
  badPreface(got: string): void;
  /** The agent floods the connection: `reason` says with what. */
  flood(reason: string): void;
}

/**
 * The decrypted bytes of one HTTP/2 connection, passed between the agent's TLS socket and
 * nghttp2 through JavaScript rather than natively, so that (1) pausing or corking the TLS
 * socket stops the connection, as it does an HTTP/1.1 one (socketControl), and (2) what nghttp2
 * refuses by itself is seen: a malformed frame ends the connection with nghttp2's own GOAWAY, a
 * malformed header section resets its stream before any 'stream' event, and Node tells
 * JavaScript of neither. The agent's preface and SETTINGS frames are checked before nghttp2
 * reads them (a refusal with trajgate's reason, not nghttp2's bare GOAWAY); nothing the agent
 * sends after a refusal is passed on.
 */
export class H2Wire extends Duplex {
  /** Told of the connection; set once the session exists. */
  #watch: WireWatch | null = null;
  readonly #tls: TLSSocket;
  readonly #agent = new AgentFrames();
  readonly #sent = new SentFrames();
  #dropped = 0;

  constructor(tls: TLSSocket) {
    super({ allowHalfOpen: false });
    this.#tls = tls;
    tls.on('data', (chunk: Buffer) => {
      if (this.#dropping(chunk)) return;
      const wrong = this.#agent.read(chunk);
      if (wrong === null) {
        if (!this.push(chunk)) tls.pause();
      } else if ('preface' in wrong) this.#watch?.badPreface(wrong.preface);
      else this.#watch?.flood(wrong.flood);
    });
    // The agent's end is not passed on as one: Node's stream wrapper would shut its writing
    // side down at once and then fail an internal assertion on nghttp2's next write (its GOAWAY).
    // The interceptor destroys a TLS socket the agent ended, and the session goes with it.
    tls.once('close', () => this.destroy());
    tls.on('error', (err) => this.destroy(err));
  }

  /** After a refusal, or once closed, the agent's bytes are dropped: a bounded number of them. */
  #dropping(chunk: Buffer): boolean {
    if (!this.#agent.wrong && !this.destroyed) return false;
    this.#dropped += chunk.length;
    if (this.#dropped > LINGER_BYTES) this.#tls.destroy();
    return true;
  }

  /** Sets the watch of both directions. */
  watchWith(watch: WireWatch): void {
    this.#watch = watch;
    this.#sent.watch = watch;
  }

  override _read(): void {
    this.#tls.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error) => void): void {
    const out = this.#sent.scan(chunk);
    const bytes = out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
    if (out.length === 0 || this.#tls.write(bytes)) return done();
    this.#tls.once('drain', () => done());
  }

  override _final(done: () => void): void {
    this.#tls.end(done);
  }

  /** Ends the TLS socket once its last bytes are out, lingering for the agent's own end. */
  override _destroy(err: Error | null, done: (err: Error | null) => void): void {
    const tls = this.#tls;
    if (err !== null || tls.destroyed) {
      tls.destroy();
      return done(err);
    }
    const timer = setTimeout(() => tls.destroy(), LINGER_MS).unref();
    tls.once('close', () => clearTimeout(timer));
    tls.once('end', () => tls.destroy());
    tls.end();
    tls.resume();
    done(null);
  }
}
