import { JsonRpcScan } from './json-rpc-scan.js';

const CR = 0x0d;
const LF = 0x0a;
const NEWLINE = Buffer.from('\n');

/**
 * Called where an event ends (the byte at `end` in the chunk fed is the line break of its blank
 * line), with the scan of its data (null when it had no data line: a client dispatches nothing).
 */
export type OnEvent = (scan: JsonRpcScan | null, end: number) => void;

/**
 * A Server-Sent Events stream (WHATWG HTML § 9.2.6) read byte by byte as it passes: each event's
 * `data` lines, joined by newlines, are one JSON-RPC message, fed to its own scan as they come.
 * Lines end in CRLF, LF or CR; a blank line ends (dispatches) an event; text not closed by a
 * blank line is no event. Nothing is kept but the scan's few bytes of state.
 */
export class SseReader {
  #scan: JsonRpcScan | null = null;
  #dataLines = 0;
  /** start: nothing on this line yet; name: reading a field name; space: after `data:`. */
  #mode: 'start' | 'name' | 'space' | 'data' | 'skip' = 'start';
  /** The field name so far, up to one byte past `data` (longer names are not `data`). */
  #name = '';
  #afterCr = false;
  #started = false;

  constructor(readonly onEvent: OnEvent) {}

  feed(bytes: Buffer): void {
    let i = 0;
    // A byte order mark may open the stream.
    if (!this.#started && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) i = 3;
    this.#started = true;
    while (i < bytes.length) {
      const b = bytes[i] as number;
      if (this.#afterCr) {
        this.#afterCr = false;
        if (b === LF) {
          i++;
          continue;
        }
      }
      if (b === CR || b === LF) {
        this.#endLine(i);
        this.#afterCr = b === CR;
        i++;
      } else if (this.#mode === 'data' || this.#mode === 'skip') {
        const end = lineEnd(bytes, i);
        if (this.#mode === 'data') this.#scan?.feed(bytes, i, end);
        i = end;
      } else if (this.#mode === 'space') {
        this.#mode = 'data';
        if (b === 0x20) i++;
      } else {
        if (b === 0x3a) this.#field();
        else if (this.#name.length < 5) this.#name += String.fromCharCode(b);
        if (this.#mode === 'start') this.#mode = 'name';
        i++;
      }
    }
  }

  /** A colon ended the field name: `data` starts a data line, anything else is passed over. */
  #field(): void {
    if (this.#name === 'data') {
      this.#dataLine();
      this.#mode = 'space';
    } else this.#mode = 'skip';
  }

  #dataLine(): void {
    this.#scan ??= new JsonRpcScan();
    if (this.#dataLines++ > 0) this.#scan.feed(NEWLINE);
  }

  #endLine(at: number): void {
    if (this.#mode === 'start') {
      const scan = this.#scan;
      this.#scan = null;
      this.#dataLines = 0;
      this.onEvent(scan, at);
    } else if (this.#mode === 'name' && this.#name === 'data') this.#dataLine();
    this.#mode = 'start';
    this.#name = '';
  }
}

/** Index of the next CR or LF from `i`, or the end of `bytes`. */
function lineEnd(bytes: Buffer, i: number): number {
  const cr = bytes.indexOf(CR, i);
  const lf = bytes.indexOf(LF, i);
  if (cr < 0) return lf < 0 ? bytes.length : lf;
  return lf < 0 ? cr : Math.min(cr, lf);
}
