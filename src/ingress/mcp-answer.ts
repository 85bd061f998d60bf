import type { IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import { decoder, parseCodings } from '../action/content-codings.js';
import type { AnswerWatch } from '../action/reverse-proxy.js';
import { JsonRpcScan } from './json-rpc-scan.js';
import { SseReader } from './sse-reader.js';

/** Decoded bytes read at most (a compressed answer may expand far); the rest passes unread. */
const MAX_DECODED = 64 * 1024 * 1024;

interface Reader {
  feed(bytes: Buffer): void;
  readonly failed: boolean;
}

/**
 * Watches the answer to a `tools/call` as it passes to the client: a failure is an upstream
 * status ≥ 400, a JSON-RPC `error` or `result.isError: true`, in an `application/json` body
 * or in a Server-Sent Events stream. Nothing is held back or kept but a few bytes of state; a
 * compressed answer is decoded beside it (what the client gets is answer-gate.ts's).
 */
export function mcpAnswerWatch(answer: IncomingMessage): AnswerWatch {
  const status = answer.statusCode ?? 0;
  const type = (answer.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const parsed = parseCodings(answer.headers['content-encoding']);
  // One coding is read (the usual case); another or several pass unread.
  const codings = 'codings' in parsed && parsed.codings.length <= 1 ? parsed.codings : null;
  const reader: Reader | null =
    status >= 400 || codings === null
      ? null
      : type === 'text/event-stream'
        ? new SseAnswer()
        : /^application\/([\w.-]+\+)?json$/.test(type)
          ? new JsonRpcScan()
          : null;
  const failed = () => status >= 400 || (reader?.failed ?? false);
  const coding = codings?.[0];
  if (reader === null || coding === undefined) {
    return { chunk: (bytes) => reader?.feed(bytes), end: failed };
  }
  return decodedWatch(decoder(coding), reader, failed);
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

/** The answer failed when a response among its events did (sse-reader.ts). */
class SseAnswer implements Reader {
  failed = false;
  readonly #reader = new SseReader((scan) => {
    if (scan?.response && scan.failed) this.failed = true;
  });

  feed(bytes: Buffer): void {
    this.#reader.feed(bytes);
  }
}
