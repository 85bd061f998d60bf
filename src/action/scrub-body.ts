import type { Transform } from 'node:stream';
import type { Coding } from './content-codings.js';
import { decoder, parseCodings } from './content-codings.js';
import type { CredentialScrubber, ScrubStream } from './credential-scrub.js';

/**
 * A response head for a request that carried swapped-in credentials: values scrubbed, and no
 * Content-Length, since scrubbing changes the body's length (an HTTP/1.1 agent gets it chunked,
 * RFC 9112 § 7.1; HTTP/2 frames need none, RFC 9113 § 8.1.1). A gzip, deflate or br body is
 * decoded to be scrubbed and goes without its Content-Encoding; another coding (or several)
 * cannot be looked into: `unsupported`, and the answer is refused rather than passed unread.
 */
export function scrubbedHead(
  scrubber: CredentialScrubber,
  fields: readonly string[],
):
  { readonly fields: string[]; readonly coding: Coding | null } | { readonly unsupported: string } {
  const kept: string[] = [];
  let encoding: string | undefined;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!.toLowerCase();
    if (name === 'content-encoding')
      encoding = encoding === undefined ? fields[i + 1] : `${encoding}, ${fields[i + 1]}`;
    else if (name !== 'content-length') kept.push(fields[i]!, fields[i + 1]!);
  }
  const parsed = parseCodings(encoding);
  if ('unsupported' in parsed) return { unsupported: parsed.unsupported };
  if (parsed.codings.length > 1) return { unsupported: encoding! };
  return { fields: scrubber.headers(kept), coding: parsed.codings[0] ?? null };
}

/** Where a scrubbed body goes: the agent's response, its drain, and what ends it on an error. */
export interface ScrubSink {
  send(chunk: Buffer): boolean;
  drained(then: () => void): void;
  failed(err: Error): void;
}

/**
 * One response body on its way to the agent, decoded if it must be and scrubbed, with
 * backpressure both ways: `write` answers false when the upstream must wait (then `resume` is
 * called), and a full agent pauses the decoder. `freeze` holds what the decoder still has.
 */
export class ScrubbedBody {
  readonly #stream: ScrubStream;
  #decoder: Transform | null = null;
  /** The agent is not reading (until drained), or the flow is frozen (until thawed). */
  #full = false;
  #frozen = false;

  constructor(
    scrubber: CredentialScrubber,
    private readonly coding: Coding | null,
    private readonly sink: ScrubSink,
  ) {
    this.#stream = scrubber.start();
  }

  write(chunk: Buffer, resume: (() => void) | null): boolean {
    if (this.coding === null) return this.#out(this.#stream.write(chunk), resume);
    const d = (this.#decoder ??= this.#open(this.coding, chunk));
    if (d.write(chunk)) return true;
    if (resume !== null) d.once('drain', resume);
    return false;
  }

  /** The upstream's body ended: what is held back goes, then `done`. */
  end(done: () => void): void {
    const d = this.#decoder;
    const last = () => {
      this.#out(this.#stream.end(), null);
      done();
    };
    if (d === null) return last();
    d.once('end', last);
    d.end();
  }

  freeze(): void {
    this.#frozen = true;
    this.#decoder?.pause();
  }

  thaw(): void {
    this.#frozen = false;
    this.#flow();
  }

  /** The answer ended otherwise (an error, the agent gone): the decoder stops. */
  close(): void {
    this.#decoder?.destroy();
  }

  #flow(): void {
    if (!this.#full && !this.#frozen) this.#decoder?.resume();
  }

  #out(chunk: Buffer, resume: (() => void) | null): boolean {
    if (chunk.length === 0 || this.sink.send(chunk)) return true;
    if (resume !== null) this.sink.drained(resume);
    return false;
  }

  #open(coding: Coding, head: Buffer): Transform {
    const d = decoder(coding, head);
    const drained = () => {
      this.#full = false;
      this.#flow();
    };
    d.on('data', (plain: Buffer) => {
      if (this.#out(this.#stream.write(plain), drained)) return;
      this.#full = true;
      d.pause();
    });
    d.once('error', (err) => this.sink.failed(err));
    if (this.#frozen) d.pause();
    return d;
  }
}
