import type { AhoCorasick } from './aho-corasick.js';

/**
 * What an upstream may undo before it reads a sentinel: percent-encoding (RFC 3986 § 2.1), JSON
 * escapes (RFC 8259 § 7), line breaks in base64 (RFC 2045 § 6.8 wraps it at 76 characters).
 */
export type Escape = 'percent' | 'json' | 'wrapped';

type Report = (needle: number, escape: Escape | null) => void;

const PERCENT = 0x25;
const CR = 0x0d;
const LF = 0x0a;
const BACKSLASH = 0x5c;
const U = 0x75;
const indexOrEnd = (chunk: Uint8Array, byte: number, from: number): number => {
  const at = chunk.indexOf(byte, from);
  return at < 0 ? chunk.length : at;
};

/** Each byte's hex digit value, either case; -1 for the rest. */
const HEX = new Int8Array(256).fill(-1);
for (let d = 0; d < 16; d++) {
  HEX[d.toString(16).charCodeAt(0)] = d;
  HEX[d.toString(16).toUpperCase().charCodeAt(0)] = d;
}
/** RFC 8259 § 7: the byte each two-character escape stands for; -1 for none. */
const SIMPLE = new Int16Array(256).fill(-1);
for (const [c, b] of Object.entries({
  '"': 0x22,
  '\\': 0x5c,
  '/': 0x2f,
  b: 8,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
})) {
  SIMPLE[c.charCodeAt(0)] = b;
}

/** Runs the automaton over the stream as is. */
export class RawPass {
  private state = 0;

  constructor(
    private readonly automaton: AhoCorasick,
    private readonly report: Report,
  ) {}

  private readonly found = (state: number): void => {
    for (const needle of this.automaton.matches(state)!) this.report(needle, null);
  };

  write(chunk: Uint8Array): void {
    this.state = this.automaton.run(this.state, chunk, 0, chunk.length, this.found);
  }
}

/**
 * Runs the automaton over one decoding of the stream. It reports only matches that take in a
 * decoded escape: the rest are the raw pass's. Bytes held back as a possible escape need no
 * flush at the end: `%` and `\` are in no needle (all are word characters), so no match can
 * end inside them.
 */
abstract class DecodingPass {
  private state = 0;
  /** Index of the last byte given to the automaton, and of the last one an escape gave. */
  private at = 0;
  private lastEscaped = 0;
  /** In a run of literal bytes, the byte at chunk index k is the (runBase + k + 1)th given. */
  private runBase = 0;
  /** 0, or how far into an escape the last bytes were (each pass's own steps). */
  protected held = 0;
  protected abstract readonly escape: Escape;
  /** The bytes that start an escape (one may stand twice). */
  protected abstract readonly openers: readonly [number, number];

  constructor(
    private readonly automaton: AhoCorasick,
    private readonly report: Report,
  ) {}

  /** Bytes up to the next opener go through in one tight run; escapes byte by byte. */
  write(chunk: Uint8Array): void {
    const [first, second] = this.openers;
    // Where each opener is next, looked up again only once passed: no rescans of the chunk.
    let nextFirst = -1;
    let nextSecond = -1;
    for (let i = 0; i < chunk.length;) {
      const b = chunk[i]!;
      if (this.held > 0 || b === first || b === second) {
        this.take(b);
        i++;
        continue;
      }
      if (nextFirst < i) nextFirst = indexOrEnd(chunk, first, i);
      if (nextSecond < i) nextSecond = indexOrEnd(chunk, second, i);
      const end = Math.min(nextFirst, nextSecond);
      this.runBase = this.at - i;
      this.state = this.automaton.run(this.state, chunk, i, end, this.literal);
      this.at += end - i;
      i = end;
    }
  }

  private readonly literal = (state: number, index: number): void => {
    this.ended(state, this.runBase + index + 1);
  };

  protected abstract take(b: number): void;

  protected emit(byte: number, escaped: boolean): void {
    this.at++;
    if (escaped) this.lastEscaped = this.at;
    this.state = this.automaton.step(this.state, byte);
    if (this.automaton.matches(this.state) !== null) this.ended(this.state, this.at);
  }

  /** A byte left out between the last one given and the next: a match across it is this pass's. */
  protected skipped(): void {
    this.lastEscaped = this.at;
  }

  private ended(state: number, at: number): void {
    for (const needle of this.automaton.matches(state)!) {
      if (this.lastEscaped > at - this.automaton.lengths[needle]!) this.report(needle, this.escape);
    }
  }
}

/** RFC 3986 § 2.1: `%XX` in either case is the byte XX; a `%` not followed by two hex digits is itself. */
export class PercentPass extends DecodingPass {
  /** `held` is 1 after `%`, 2 after `%` and a hex digit. */
  private digit = 0;
  protected readonly escape = 'percent';
  protected readonly openers = [PERCENT, PERCENT] as const;

  protected take(b: number): void {
    if (this.held > 0) {
      const held = this.held;
      this.held = 0;
      if (HEX[b]! >= 0) {
        if (held === 1) {
          this.held = 2;
          this.digit = b;
        } else {
          this.emit(HEX[this.digit]! * 16 + HEX[b]!, true);
        }
        return;
      }
      this.emit(PERCENT, false);
      if (held === 2) this.emit(this.digit, false);
    }
    if (b === PERCENT) this.held = 1;
    else this.emit(b, false);
  }
}

/**
 * RFC 8259 § 7: `\uXXXX` for any character and the two-character escapes (`\/` among them). A
 * character beyond ASCII is in no sentinel: it stands as a byte that breaks any match.
 */
export class JsonPass extends DecodingPass {
  /** `held` is 1 after `\`, 2 to 5 after `\u` and that many hex digits less 2. */
  private readonly digits = new Uint8Array(4);
  private value = 0;

  protected readonly escape = 'json';
  protected readonly openers = [BACKSLASH, BACKSLASH] as const;

  protected take(b: number): void {
    if (this.held === 1) {
      this.held = 0;
      if (b === U) {
        this.held = 2;
        this.value = 0;
        return;
      }
      if (SIMPLE[b]! >= 0) {
        this.emit(SIMPLE[b]!, true);
        return;
      }
      this.emit(BACKSLASH, false);
    } else if (this.held >= 2) {
      if (HEX[b]! >= 0) {
        this.digits[this.held - 2] = b;
        this.value = this.value * 16 + HEX[b]!;
        if (++this.held === 6) {
          this.held = 0;
          this.emit(this.value < 0x80 ? this.value : 0, true);
        }
        return;
      }
      this.emit(BACKSLASH, false);
      this.emit(U, false);
      for (let i = 0; i < this.held - 2; i++) this.emit(this.digits[i]!, false);
      this.held = 0;
    }
    if (b === BACKSLASH) this.held = 1;
    else this.emit(b, false);
  }
}

/** Leaves out CR and LF, so that base64 wrapped in lines reads as one run. */
export class WrappedPass extends DecodingPass {
  protected readonly escape = 'wrapped';
  protected readonly openers = [CR, LF] as const;

  protected take(b: number): void {
    if (b === CR || b === LF) this.skipped();
    else this.emit(b, false);
  }
}
