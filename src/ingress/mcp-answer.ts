import type { IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { AnswerWatch } from '../action/reverse-proxy.js';
import { JsonRpcScan } from './json-rpc-scan.js';

/** Decoded bytes read at most (a compressed answer may expand far); the rest passes unread. */
const MAX_DECODED = 64 * 1024 * 1024;
const CR = 0x0d;
const LF = 0x0a;
const NEWLINE = Buffer.from('\n');

const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

interface Reader {
  feed(bytes: Buffer): void;
  readonly failed: boolean;
}

/**
 * Watches the answer to a `tools/call` as it passes to the client: a failure is an upstream
 * status ≥ 400, a JSON-RPC `error` or `result.isError: true`, in an `application/json` body
 * or in a Server-Sent Events stream. Nothing is held back or kept but a few bytes of state; a
 * compressed answer is decoded beside it (the client gets the upstream's bytes).
 */
export function mcpAnswerWatch(answer: IncomingMessage): AnswerWatch {
  const status = answer.statusCode ?? 0;
  const type = (answer.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const encoding = (answer.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const decoder = encoding === 'identity' ? null : DECODERS[encoding];
  const reader: Reader | null =
    status >= 400 || decoder === undefined
      ? null
      : type === 'text/event-stream'
        ? new SseAnswer()
        : /^application\/([\w.-]+\+)?json$/.test(type)
          ? new JsonRpcScan()
          : null;
  const failed = () => status >= 400 || (reader?.failed ?? false);
  if (reader === null || !decoder) {
    return { chunk: (bytes) => reader?.feed(bytes), end: failed };
  }
  return decodedWatch(decoder(), reader, failed);
}

/** Feeds `reader` what `stream` decodes; the verdict waits for the decoder to finish. */
function decodedWatch(stream: Transform, reader: Reader, failed: () => boolean): AnswerWatch {
  let decoded = 0;
  let ended = false;
  const done = new Promise<void>((resolve) => {
    stream.on('data', (bytes: Buffer) => {
      decoded += bytes.length;
      if (decoded <= MAX_DECODED) reader.feed(bytes);
      else stream.destroy();
    });
    stream.once('end', resolve);
    stream.once('close', resolve);
    // A corrupt coding is the client's to find out; the verdict is what was read.
    stream.once('error', () => resolve());
  });
  return {
    chunk: (bytes) => {
      if (!ended && !stream.destroyed) stream.write(bytes);
    },
    end: async () => {
      ended = true;
      if (!stream.destroyed) stream.end();
      await done;
      return failed();
    },
  };
}

/**
 * A Server-Sent Events stream (WHATWG HTML § 9.2.6) read byte by byte: each event's `data`
 * lines, joined by newlines, are one JSON-RPC message, fed to its own scan as they come. The
 * answer failed when a response among them did; notifications and server requests sent before
 * the response are read and passed over. An event not closed by a blank line is not one.
 */
class SseAnswer implements Reader {
  failed = false;
  #scan: JsonRpcScan | null = null;
  #dataLines = 0;
  /** start: nothing on this line yet; name: reading a field name; space: after `data:`. */
  #mode: 'start' | 'name' | 'space' | 'data' | 'skip' = 'start';
  /** The field name so far, up to one byte past `data` (longer names are not `data`). */
  #name = '';
  #afterCr = false;
  #started = false;

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
        this.#endLine();
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

  #endLine(): void {
    if (this.#mode === 'start') this.#dispatch();
    else if (this.#mode === 'name' && this.#name === 'data') this.#dataLine();
    this.#mode = 'start';
    this.#name = '';
  }

  #dispatch(): void {
    if (this.#scan?.response && this.#scan.failed) this.failed = true;
    this.#scan = null;
    this.#dataLines = 0;
  }
}

/** Index of the next CR or LF from `i`, or the end of `bytes`. */
function lineEnd(bytes: Buffer, i: number): number {
  const cr = bytes.indexOf(CR, i);
  const lf = bytes.indexOf(LF, i);
  if (cr < 0) return lf < 0 ? bytes.length : lf;
  return lf < 0 ? cr : Math.min(cr, lf);
}
