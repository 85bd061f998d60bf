import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Transform } from 'node:stream';
import type { TransformCallback } from 'node:stream';
import { decoder, parseCodings } from '../action/content-codings.js';
import type { Gate } from '../action/reverse-proxy.js';
import type { JsonRpcId } from './mcp.js';
import { JsonRpcScan, NO_ID } from './json-rpc-scan.js';
import { SseReader } from './sse-reader.js';

/** An event's bytes held until its blank line, to drop it whole; a longer one streams on. */
const HOLD = 64 * 1024;

/** Whom an answer's messages may answer: the POST's request, or nobody (GET, a notification). */
export type Owed = { readonly id: JsonRpcId } | null;

/**
 * The gate of an MCP answer streamed to the agent. A client takes a JSON-RPC response for any
 * of its pending requests from any stream, but MCP's streamable HTTP (2025-06-18, "Sending
 * Messages to the Server" and "Listening for Messages from the Server") puts the response to a
 * POST on that POST's stream only, and none on the GET stream: any other response (a
 * tools/list answered past the pins and the policy, bridge-tool-list.ts) is not delivered. An
 * event stream's foreign event is dropped when it ends within HOLD bytes (a client dispatches
 * an event only at its blank line), else the answer is cut before that blank line; a JSON
 * answer (one message) is cut before its last bytes. A batch (a JSON array) counts as foreign.
 * A content-coded answer is decoded and sent identity-coded: what is judged is what is sent.
 * An error status passes unread (a client reads no message from it).
 */
export function answerGate(owed: Owed, dropped: (why: string) => void) {
  return (answer: IncomingMessage): Gate => {
    const headers = { ...answer.headers };
    if ((answer.statusCode ?? 0) >= 400) return { headers, steps: [] };
    const codings = parseCodings(headers['content-encoding']);
    if ('unsupported' in codings)
      return refusedGate(headers, `has the content coding ${codings.unsupported}`);
    const decoding = [...codings.codings].reverse().map((c) => decoder(c));
    const sse = essence(headers['content-type']) === 'text/event-stream';
    if (decoding.length > 0 || sse) delete headers['content-length'];
    delete headers['content-encoding'];
    const gate = sse ? new SseGate(owed, dropped) : new JsonGate(owed);
    return { headers, steps: [...decoding, gate], refused: () => gate.refused };
  };
}

/** A media type without its parameters, as clients compare it. */
function essence(type: string | undefined): string {
  return (type ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** Why a message (as scanned) may not reach the agent, or null when it may. */
function foreign(scan: JsonRpcScan | null, owed: Owed): string | null {
  if (scan === null) return null;
  if (scan.batch) return 'a JSON-RPC batch (not one of MCP since 2025-06-18)';
  if (!scan.response || (owed !== null && scan.id === owed.id)) return null;
  const id = scan.id === NO_ID ? 'no readable id' : `id ${JSON.stringify(scan.id)}`;
  return owed === null
    ? `a response (${id}) on a stream that carries none`
    : `a response to another request (${id}) on this stream`;
}

const line = (what: string) => `the server sent ${what}: not delivered`;

/** Fails every answer: one that cannot be read is not passed on. */
function refusedGate(headers: IncomingHttpHeaders, why: string): Gate {
  const reason = `the server's answer ${why}, which trajgate cannot read: not delivered`;
  const cut = new Transform({ transform: (_c, _e, done) => done(new Error(reason)) });
  return { headers, steps: [cut], refused: () => reason };
}

abstract class Cutting extends Transform {
  refused: string | null = null;

  protected cut(why: string, done: TransformCallback): void {
    this.refused = line(why);
    done(new Error(this.refused));
  }

  override _transform(chunk: Buffer, _e: BufferEncoding, done: TransformCallback): void {
    const why = this.accept(chunk);
    if (why === null) done();
    else this.cut(why, done);
  }

  /** Passes on what may go of `chunk`; why the answer is cut, or null. */
  protected abstract accept(chunk: Buffer): string | null;
}

/** An event stream, event by event: each foreign event dropped (or the stream cut). */
class SseGate extends Cutting {
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** The current event outgrew HOLD: its bytes pass as they come, but for its blank line. */
  #streaming = false;
  #verdict: string | null = null;

  constructor(
    readonly owed: Owed,
    readonly dropped: (why: string) => void,
  ) {
    super();
  }

  /** The chunk being read, and where its bytes not yet placed start. */
  #chunk: Buffer = Buffer.alloc(0);
  #from = 0;
  readonly #reader = new SseReader((scan, end) => this.#event(scan, end));

  protected accept(chunk: Buffer): string | null {
    this.#chunk = chunk;
    this.#from = 0;
    this.#reader.feed(chunk);
    if (this.#verdict === null) this.#keep(chunk.subarray(this.#from));
    return this.#verdict;
  }

  /** An event ended at `end` (its blank line's line break): sent, dropped, or the cut. */
  #event(scan: JsonRpcScan | null, end: number): void {
    if (this.#verdict !== null) return;
    this.#keep(this.#chunk.subarray(this.#from, end));
    this.#from = end + 1;
    const why = foreign(scan, this.owed);
    if (why !== null && this.#streaming) {
      this.#verdict = why;
      return;
    }
    if (why === null) this.#keep(this.#chunk.subarray(end, end + 1));
    else this.dropped(line(why));
    this.#end(why === null);
  }

  /** Holds `bytes` of the current event, or passes them on once it outgrew HOLD. */
  #keep(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (this.#streaming) return void this.push(bytes);
    this.#held.push(bytes);
    this.#heldBytes += bytes.length;
    if (this.#heldBytes <= HOLD) return;
    this.#streaming = true;
    for (const b of this.#held) this.push(b);
    this.#held = [];
  }

  /** The event ended: sent (what was held goes) or dropped (it is forgotten). */
  #end(sent: boolean): void {
    if (sent) for (const b of this.#held) this.push(b);
    this.#held = [];
    this.#heldBytes = 0;
    this.#streaming = false;
  }

  /** Text after the last event is no event (a client discards it): passed as it came. */
  override _flush(done: TransformCallback): void {
    this.#end(true);
    done();
  }
}

/** One JSON message (or batch): its last chunk is held until it is known to be no foreign one. */
class JsonGate extends Cutting {
  readonly #scan = new JsonRpcScan();
  #last: Buffer | null = null;

  constructor(readonly owed: Owed) {
    super();
  }

  protected accept(chunk: Buffer): string | null {
    this.#scan.feed(chunk);
    if (this.#last !== null) this.push(this.#last);
    this.#last = chunk;
    return null;
  }

  override _flush(done: TransformCallback): void {
    const why = foreign(this.#scan, this.owed);
    if (why !== null) return this.cut(why, done);
    if (this.#last !== null) this.push(this.#last);
    done();
  }
}
