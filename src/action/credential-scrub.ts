import { jsonEscape, percentEncode, replaceNeedles } from './credential-spellings.js';

/** A credential as the scrub needs it: its value to find, its sentinel to put instead. */
export interface ScrubCredential {
  readonly name: string;
  readonly sentinel: string;
  readonly value: string;
}

/**
 * The spellings an upstream is likely to echo a value in: as is; JSON-escaped, `/` as is or as
 * `\/` (RFC 8259 § 7 allows both); percent-encoded per RFC 3986 in either hex case, and as
 * JavaScript's encodeURIComponent leaves `!'()*`.
 */
function spellingsOf(value: string): string[] {
  const json = jsonEscape(value);
  const component = encodeURIComponent(value);
  return [
    ...new Set([
      value,
      json,
      json.replaceAll('/', '\\/'),
      percentEncode(value),
      percentEncode(value, true),
      component,
    ]),
  ];
}

/**
 * Replaces credentials' values by their sentinels in what an upstream answers, so an echo of a
 * value (a token introspection, an error quoting the header) never reaches the agent. Built
 * once per credential list; `start()` scrubs one body chunk by chunk.
 */
export class CredentialScrubber {
  readonly needles: readonly Buffer[];
  readonly sentinels: readonly Buffer[];
  /** Bytes a stream holds back: a value split across chunks is found whole. */
  readonly carry: number;

  constructor(credentials: readonly ScrubCredential[]) {
    const needles: Buffer[] = [];
    const sentinels: Buffer[] = [];
    for (const c of credentials) {
      for (const spelled of spellingsOf(c.value)) {
        needles.push(Buffer.from(spelled));
        sentinels.push(Buffer.from(c.sentinel));
      }
    }
    this.needles = needles;
    this.sentinels = sentinels;
    this.carry = Math.max(0, ...needles.map((n) => n.length - 1));
  }

  /** One whole body or field value, scrubbed. */
  scrub(bytes: Buffer): Buffer {
    return replaceNeedles(bytes, this.needles, this.sentinels).out;
  }

  /**
   * Field values scrubbed (names are the upstream's protocol, never a secret). Values are
   * latin1 strings, one character per byte, as Node reads and writes them.
   */
  headers(fields: readonly string[]): string[] {
    const out = [...fields];
    for (let i = 1; i < out.length; i += 2) {
      const scrubbed = replaceNeedles(Buffer.from(out[i]!, 'latin1'), this.needles, this.sentinels);
      if (scrubbed.hits !== null) out[i] = scrubbed.out.toString('latin1');
    }
    return out;
  }

  start(): ScrubStream {
    return new ScrubStream(this);
  }
}

/** One body's scrub: each chunk in, what is safe to send out (the last `carry` bytes held). */
export class ScrubStream {
  #held: Buffer | null = null;

  constructor(private readonly scrubber: CredentialScrubber) {}

  write(chunk: Buffer): Buffer {
    const input = this.#held === null ? chunk : Buffer.concat([this.#held, chunk]);
    const { needles, sentinels, carry } = this.scrubber;
    // Only a tail that could still become a value is held: a stream that pauses (server-sent
    // events, a long poll) gets all else at once. A match starting before it is whole in `input`.
    const limit = partialFrom(input, needles, Math.max(0, input.length - carry));
    const { out, consumed } = replaceNeedles(input, needles, sentinels, limit);
    // Copied: the chunk's memory is its producer's once this returns.
    this.#held = consumed < input.length ? Buffer.from(input.subarray(consumed)) : null;
    return out;
  }

  /** The bytes held back, scrubbed: the body's end. */
  end(): Buffer {
    const rest = this.#held;
    this.#held = null;
    return rest === null ? Buffer.alloc(0) : this.scrubber.scrub(rest);
  }
}

/** The first position from `from` where the rest of `input` begins some needle, else its end. */
function partialFrom(input: Buffer, needles: readonly Buffer[], from: number): number {
  for (let q = from; q < input.length; q++) {
    const rest = input.length - q;
    for (const n of needles) if (n.length > rest && input.compare(n, 0, rest, q) === 0) return q;
  }
  return input.length;
}
