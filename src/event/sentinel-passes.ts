import type { AhoCorasick } from './aho-corasick.js';

/** Escapes an upstream may undo before it reads a sentinel: RFC 3986 § 2.1, RFC 8259 § 7. */
export type Escape = 'percent' | 'json';

type Report = (needle: number, escape: Escape | null) => void;

const PERCENT = 0x25;
const BACKSLASH = 0x5c;
const U = 0x75;
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

/**
 * Runs the automaton over one decoding of the stream, the raw one here. A decoding pass reports
 * only matches that take in a decoded escape: the rest are the raw pass's. Bytes held back as a
 * possible escape need no flush at the end: `%` and `\` are in no needle (sentinels are word
 * characters, base64 adds `+/-`), so no match can end inside them.
 */
export class Pass {
  private state = 0;
  /** Index of the last byte given to the automaton, and of the last one an escape gave. */
  private at = 0;
  private lastEscaped = 0;

  /** The escape this pass undoes; the raw pass undoes none. */
  protected readonly escape: Escape | null = null;

  constructor(
    private readonly automaton: AhoCorasick,
    private readonly report: Report,
  ) {}

  write(chunk: Uint8Array): void {
    for (const b of chunk) this.take(b);
  }

  protected take(b: number): void {
    this.emit(b, false);
  }

  protected emit(byte: number, escaped: boolean): void {
    this.at++;
    if (escaped) this.lastEscaped = this.at;
    this.state = this.automaton.step(this.state, byte);
    const ends = this.automaton.matches(this.state);
    if (ends === null) return;
    for (const needle of ends) {
      const from = this.at - this.automaton.lengths[needle]! + 1;
      if (this.escape === null || this.lastEscaped >= from) this.report(needle, this.escape);
    }
  }
}

/** RFC 3986 § 2.1: `%XX` in either case is the byte XX; a `%` not followed by two hex digits is itself. */
export class PercentPass extends Pass {
  /** 0, or 1 after `%`, or 2 after `%` and a hex digit. */
  private held = 0;
  private digit = 0;

  protected override readonly escape = 'percent';

  protected override take(b: number): void {
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
export class JsonPass extends Pass {
  /** 0, or 1 after `\`, or 2 to 5 after `\u` and that many hex digits less 2. */
  private held = 0;
  private readonly digits = new Uint8Array(4);
  private value = 0;

  protected override readonly escape = 'json';

  protected override take(b: number): void {
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
