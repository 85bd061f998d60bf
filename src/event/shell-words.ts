/**
 * A command line split into words as a POSIX shell (and bash's `$'…'`) would: quotes removed,
 * escapes undone, so `T"OK"EN=x`, `TOK\EN=x` and `$'\x54OKEN=x'` all read `TOKEN=x`. Each
 * character keeps where it came from in the line and in which quotes, so that a part of a
 * word can be replaced in the line as written (command-line.ts). Expansions (`$x`, `$(…)`)
 * are not run: they stay text. Used only to find secrets, never to judge.
 */

/** The quoting a character was written in: none, `'…'`, `"…"`, `$'…'` (an index of CLOSE and OPEN). */
export type Quote = 0 | 1 | 2 | 3;
const Quote = { None: 0, Single: 1, Double: 2, Ansi: 3 } as const;

/** Closes and opens each quoting, to write a replacement that changes quotes inside it. */
export const CLOSE = ['', "'", '"', "'"] as const;
export const OPEN = ['', "'", '"', "$'"] as const;

export interface ShellWord {
  /** The word as the shell passes it. */
  readonly text: string;
  /** Where its first unit is in ShellWords' arrays. */
  readonly at: number;
}

/** Between two words: a blank, or an operator or line break (`null`), which ends a command. */
export type ShellToken = ShellWord | null;

export interface ShellWords {
  readonly tokens: readonly ShellToken[];
  /**
   * Per UTF-16 unit of the words (word.at + i for its unit i): where in the line it was written
   * ([from, to)) and in which quotes.
   */
  readonly from: Int32Array;
  readonly to: Int32Array;
  readonly quote: Uint8Array;
}

/** Characters that need no reading outside quotes, taken as a run. */
const PLAIN = /[^ \t\n;&|<>()\\'"$]+/y;
const DOUBLE_PLAIN = /[^"\\]+/y;
/** Backslash escapes in `$'…'` (bash): one letter. */
const ANSI: Readonly<Record<string, string>> = {
  a: '\x07',
  b: '\b',
  e: '\x1b',
  E: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
};

/** The words' characters, written once into arrays as long as the line (never more units). */
class Cooked {
  readonly from: Int32Array;
  readonly to: Int32Array;
  readonly quote: Uint8Array;
  readonly parts: string[] = [];
  length = 0;
  /** [start, end) of each word in the arrays, or null between commands. */
  readonly words: ([number, number] | null)[] = [];
  #open = -1;

  constructor(readonly line: string) {
    this.from = new Int32Array(line.length);
    this.to = new Int32Array(line.length);
    this.quote = new Uint8Array(line.length);
  }

  get inWord(): boolean {
    return this.#open >= 0;
  }

  begin(): void {
    if (this.#open < 0) this.#open = this.length;
  }

  /** `text`, read from line[from, to) in `quote`. */
  put(text: string, from: number, to: number, quote: Quote): void {
    this.begin();
    this.parts.push(text);
    for (let k = 0; k < text.length; k++, this.length++) {
      this.from[this.length] = from;
      this.to[this.length] = to;
      this.quote[this.length] = quote;
    }
  }

  /** line[from, to), each character as itself. */
  run(from: number, to: number, quote: Quote): void {
    this.begin();
    this.parts.push(this.line.slice(from, to));
    for (let i = from; i < to; i++, this.length++) {
      this.from[this.length] = i;
      this.to[this.length] = i + 1;
      this.quote[this.length] = quote;
    }
  }

  end(separator: boolean): void {
    if (this.#open >= 0) this.words.push([this.#open, this.length]);
    this.#open = -1;
    if (separator) this.words.push(null);
  }

  done(): ShellWords {
    const text = this.parts.join('');
    const tokens = this.words.map((w) => w && { text: text.slice(w[0], w[1]), at: w[0] });
    return { tokens, from: this.from, to: this.to, quote: this.quote };
  }
}

export function shellWords(line: string): ShellWords {
  const out = new Cooked(line);
  const n = line.length;
  let i = 0;
  while (i < n) {
    const c = line[i] as string;
    if (c === '#' && !out.inWord) {
      // A comment, to the end of the line: no quoting inside it.
      const stop = line.indexOf('\n', i);
      out.run(i, (i = stop === -1 ? n : stop), Quote.None);
      out.end(false);
      continue;
    }
    PLAIN.lastIndex = i;
    if (PLAIN.test(line)) {
      out.run(i, (i = PLAIN.lastIndex), Quote.None);
    } else if (c === ' ' || c === '\t') {
      out.end(false);
      i++;
    } else if (c === '$' && line[i + 1] === "'") {
      out.begin();
      i = ansi(line, i + 2, out);
    } else if (c === '"' || (c === '$' && line[i + 1] === '"')) {
      out.begin();
      i = double(line, c === '$' ? i + 2 : i + 1, out);
    } else if (c === '$') {
      out.run(i, ++i, Quote.None);
    } else if (c === "'") {
      const stop = line.indexOf("'", i + 1);
      out.begin();
      out.run(i + 1, stop === -1 ? n : stop, Quote.Single);
      i = stop === -1 ? n : stop + 1;
    } else if (c === '\\') {
      if (line[i + 1] === '\n') i += 2;
      else if (i + 1 < n) out.put(line[i + 1] as string, i, (i += 2), Quote.None);
      else out.run(i, ++i, Quote.None);
    } else {
      // An operator or a line break: the end of a command.
      out.end(true);
      i++;
    }
  }
  out.end(false);
  return out.done();
}

/** `"…"` from `i` (after the quote): `\` escapes only `$ \` " \\` and a line break. */
function double(line: string, i: number, out: Cooked): number {
  const n = line.length;
  while (i < n && line[i] !== '"') {
    DOUBLE_PLAIN.lastIndex = i;
    if (DOUBLE_PLAIN.test(line)) {
      out.run(i, (i = DOUBLE_PLAIN.lastIndex), Quote.Double);
      continue;
    }
    const next = line[i + 1];
    if (next === '\n') i += 2;
    else if (next !== undefined && '$`"\\'.includes(next)) out.put(next, i, (i += 2), Quote.Double);
    else out.run(i, ++i, Quote.Double);
  }
  return i + 1;
}

/** `$'…'` from `i` (after the quote): C escapes, `\xHH`, octal, `\uHHHH`, `\cX`. */
function ansi(line: string, i: number, out: Cooked): number {
  const n = line.length;
  while (i < n && line[i] !== "'") {
    if (line[i] !== '\\' || i + 1 >= n) {
      out.run(i, ++i, Quote.Ansi);
      continue;
    }
    const e = line[i + 1] as string;
    const hex = /^(?:x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8}))/.exec(
      line.slice(i + 1, i + 10),
    );
    const octal = /^[0-7]{1,3}/.exec(line.slice(i + 1, i + 4));
    let text = ANSI[e] ?? e;
    let len = 2;
    if (hex !== null) {
      const code = parseInt((hex[1] ?? hex[2] ?? hex[3]) as string, 16);
      text = code <= 0x10ffff ? String.fromCodePoint(code) : '\ufffd';
      len = 1 + hex[0].length;
    } else if (octal !== null) {
      text = String.fromCharCode(parseInt(octal[0], 8) & 0xff);
      len = 1 + octal[0].length;
    } else if (e === 'c' && i + 2 < n) {
      text = String.fromCharCode(line.charCodeAt(i + 2) & 0x1f);
      len = 3;
    }
    out.put(text, i, i + len, Quote.Ansi);
    i += len;
  }
  return i + 1;
}
