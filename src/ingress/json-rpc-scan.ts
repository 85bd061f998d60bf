/** Bytes of a key kept to read it (escapes included): the keys looked for are short. */
const MAX_KEY = 64;
/** Bytes of a top-level `id` kept to read it; a longer one is read as no id at all. */
const MAX_ID = 256;
/** A top-level `id` that is missing or could not be read (too long, an object, bad JSON). */
export const NO_ID = Symbol('no id');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Bytes that end a number or literal (and with it an `id` being read). */
const STOPS = new Set([0x2c, 0x7d, 0x5d, 0x7b, 0x5b, 0x3a]);

/**
 * Reads one JSON-RPC message as its bytes pass, keeping only a short key at a time: whether it
 * is a response (a top-level `result` or `error`) and whether that response is a failure (an
 * `error` that is not null, or `result.isError: true`). Only the top-level object and the
 * result object are read; the rest (file contents, long tool output) is skipped by bracket and
 * string state, so an answer of any size costs a few bytes of memory. Keys are decoded as
 * JSON.parse decodes them (`"is\u0045rror"` is `isError`), and a repeated key counts by its
 * last value, as JSON.parse keeps it. Structural bytes are ASCII, so UTF-8 passes unread.
 * The top-level `id` is kept as JSON.parse reads it (whom a response answers), and a top-level
 * array (a batch) is noted: its members are not read.
 */
export class JsonRpcScan {
  #depth = 0;
  #topObject = false;
  /** The object at depth 2 is the top-level `result`. */
  #inResult = false;
  #inString = false;
  #escape = false;
  /** The next string at a read level is a key. */
  #expectKey = false;
  /** Raw bytes of the key being read, or null when not reading one. */
  #key: number[] | null = null;
  #keyTooLong = false;
  /** The last key read at a read level, and whether its value comes next. */
  #field = '';
  #valueNext = false;
  #enteringResult = false;
  #sawResult = false;
  #sawError = false;
  #error = false;
  #isError = false;
  #batch = false;
  /** Raw bytes of the top-level `id` being read, or null when not reading it. */
  #idRaw: number[] | null = null;
  #id: unknown = NO_ID;

  /** A response: it has a top-level `result` or `error` (requests and notifications have not). */
  get response(): boolean {
    return this.#sawResult || this.#sawError;
  }

  /** The top-level `id` (its last value, as JSON.parse keeps it), or NO_ID. */
  get id(): unknown {
    return this.#id;
  }

  /** The message is a JSON array: a batch (JSON-RPC § 6), whose members are not read. */
  get batch(): boolean {
    return this.#batch;
  }

  get failed(): boolean {
    return this.#error || (this.#sawResult && this.#isError);
  }

  feed(bytes: Buffer, start = 0, end = bytes.length): void {
    for (let i = start; i < end; i++) {
      const b = bytes[i] as number;
      if (this.#inString) {
        if (this.#key === null && this.#idRaw === null && !this.#escape) {
          // Skip to the string's next quote or backslash: most of a big answer is string.
          const q = bytes.indexOf(QUOTE, i);
          const s = bytes.indexOf(BACKSLASH, i);
          const next = Math.min(q < 0 || q >= end ? end : q, s < 0 || s >= end ? end : s);
          if (next >= end) return;
          i = next;
        }
        this.#stringByte(bytes[i] as number);
        continue;
      }
      const space = b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
      if (this.#idRaw !== null && (space || STOPS.has(b))) this.#endId();
      if (space) continue;
      if (this.#valueNext) this.#value(b);
      this.#idByte(b);
      this.#structural(b);
    }
  }

  #stringByte(b: number): void {
    if (this.#escape) this.#escape = false;
    else if (b === BACKSLASH) this.#escape = true;
    else if (b === QUOTE) {
      this.#inString = false;
      if (this.#key !== null) this.#endKey();
      if (this.#idRaw !== null) {
        this.#idByte(b);
        this.#endId();
      }
      return;
    }
    this.#idByte(b);
    if (this.#key !== null) {
      if (this.#key.length < MAX_KEY) this.#key.push(b);
      else this.#keyTooLong = true;
    }
  }

  #endKey(): void {
    const raw = this.#key as number[];
    this.#key = null;
    this.#field = '';
    if (this.#keyTooLong) return;
    try {
      this.#field = JSON.parse(`"${Buffer.from(raw).toString('utf8')}"`) as string;
    } catch {
      // Not a valid JSON string: no key looked for.
    }
  }

  #idByte(b: number): void {
    if (this.#idRaw === null) return;
    if (this.#idRaw.length < MAX_ID) this.#idRaw.push(b);
    else this.#idRaw = [];
  }

  /** The id's value ended: read as JSON.parse reads it (a cut or unparsable one is no id). */
  #endId(): void {
    const raw = this.#idRaw as number[];
    this.#idRaw = null;
    try {
      const id = JSON.parse(Buffer.from(raw).toString('utf8')) as unknown;
      this.#id = typeof id === 'object' && id !== null ? NO_ID : id;
    } catch {
      this.#id = NO_ID;
    }
  }

  /** The first byte of the value of `#field` at a read level. */
  #value(b: number): void {
    this.#valueNext = false;
    if (this.#depth === 1) {
      if (this.#field === 'id') this.#idRaw = [];
      else if (this.#field === 'error') {
        this.#sawError = true;
        this.#error = b !== 0x6e; // `null`
      } else if (this.#field === 'result') {
        this.#sawResult = true;
        this.#isError = false;
        this.#enteringResult = b === 0x7b; // `{`
      }
    } else if (this.#field === 'isError') this.#isError = b === 0x74; // `true`
  }

  /** Whether strings and commas at the current depth are read (keys of a watched object). */
  #read(): boolean {
    return (this.#depth === 1 && this.#topObject) || (this.#depth === 2 && this.#inResult);
  }

  #structural(b: number): void {
    switch (b) {
      case QUOTE:
        this.#inString = true;
        if (this.#expectKey && this.#read()) {
          this.#key = [];
          this.#keyTooLong = false;
        }
        this.#expectKey = false;
        return;
      case 0x7b: // {
        this.#depth++;
        if (this.#depth === 1) this.#topObject = true;
        if (this.#depth === 2) this.#inResult = this.#enteringResult;
        this.#enteringResult = false;
        this.#expectKey = this.#read();
        return;
      case 0x5b: // [
        if (this.#depth === 0) this.#batch = true;
        this.#depth++;
        this.#enteringResult = false;
        return;
      case 0x7d: // }
      case 0x5d: // ]
        if (this.#depth === 2) this.#inResult = false;
        this.#depth = Math.max(0, this.#depth - 1);
        this.#expectKey = false;
        return;
      case 0x3a: // :
        if (this.#read()) this.#valueNext = true;
        return;
      case 0x2c: // ,
        this.#expectKey = this.#read();
        return;
      default:
        this.#enteringResult = false;
    }
  }
}
