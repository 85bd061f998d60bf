import type { WholeAnswer } from '../action/reverse-proxy.js';
import { decodeBody, parseCodings } from '../action/content-codings.js';
import type { JsonRpcId } from './mcp.js';
import type { SseEvent, SseStream } from './sse-events.js';
import { parseSse, withData, writeSse } from './sse-events.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A tool as the list must hold it to be judged: an object with a string name. */
export interface ListedTool {
  readonly name: string;
}

/**
 * A tools/list answer as read: `list` (the tools as sent, and the answer to write with another
 * list in their place), `pass` (an error status or a JSON-RPC error: no tools to hide, sent as
 * it came) or `bad` (why it cannot be read: refused, fail closed).
 */
export type ToolListRead =
  | {
      readonly kind: 'list';
      readonly tools: readonly ListedTool[];
      /** The answer says more tools follow (`nextCursor`). */
      readonly more: boolean;
      /** The answer with `tools` in the list's place: identity-coded, as `type`. */
      render(tools: readonly ListedTool[]): { body: Buffer; type: string };
    }
  | { readonly kind: 'pass' }
  | { readonly kind: 'bad'; readonly reason: string };

const bad = (reason: string): ToolListRead => ({ kind: 'bad', reason });

/**
 * Reads the answer to the tools/list request `id`: decoded from its content codings (gzip,
 * deflate, br) within `max` bytes, as `application/json` (the response) or `text/event-stream`
 * (the response among notifications and requests, which are written back unchanged).
 */
export function readToolList(answer: WholeAnswer, id: JsonRpcId, max: number): ToolListRead {
  if (answer.status >= 400) return { kind: 'pass' };
  const codings = parseCodings(answer.headers['content-encoding']);
  if ('unsupported' in codings) return bad(`has the content coding ${codings.unsupported}`);
  const decoded = decodeBody(answer.body, codings.codings, max);
  if (!decoded.ok) return bad(decoded.reason);
  let text: string;
  try {
    text = UTF8.decode(decoded.body);
  } catch {
    return bad('is not valid UTF-8');
  }
  const type = (answer.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'text/event-stream') return fromStream(parseSse(text), id, type);
  if (!/^application\/([\w.-]+\+)?json$/.test(type))
    return bad(`is ${type === '' ? 'untyped' : type}, not JSON or an event stream`);
  const message = parsed(text);
  if (message === undefined) return bad('is not valid JSON');
  return fromResponse(message, id, (json) => ({ body: Buffer.from(json), type }));
}

function fromStream(stream: SseStream, id: JsonRpcId, type: string): ToolListRead {
  const messages = stream.events.map((e) => (e.data === null ? undefined : parsed(e.data)));
  // Only this request's response belongs here (answer-gate.ts): a client would take another.
  const other = messages.find((m) => Array.isArray(m) || (answers(m) && m.id !== id));
  if (other !== undefined)
    return bad(
      Array.isArray(other)
        ? 'holds a JSON-RPC batch'
        : `holds a response to another request (id ${JSON.stringify((other as Response).id)})`,
    );
  const answering = stream.events.flatMap((event, i) => {
    const message = messages[i];
    return isResponse(message) && message.id === id ? [{ event, i, message }] : [];
  });
  if (answering.length === 0) return bad('holds no JSON-RPC response to the request');
  if (answering.length > 1) return bad('holds more than one response to the request');
  const { event, i, message } = answering[0] as { event: SseEvent; i: number; message: object };
  return fromResponse(message, id, (json) => {
    const events = stream.events.map((e, j) => (j === i ? withData(event, json) : e));
    return { body: Buffer.from(writeSse({ events, rest: stream.rest })), type };
  });
}

/** The response itself: a result with its tools (each with a string name), or an error. */
function fromResponse(
  message: unknown,
  id: JsonRpcId,
  write: (json: string) => { body: Buffer; type: string },
): ToolListRead {
  if (!isResponse(message)) return bad('is not a JSON-RPC 2.0 response');
  if (message.id !== id)
    return bad(`answers the id ${JSON.stringify(message.id)}, not the request's`);
  if ('error' in message) return { kind: 'pass' };
  const result = message.result;
  if (typeof result !== 'object' || result === null || Array.isArray(result))
    return bad('has no result object');
  const { tools, nextCursor } = result as { tools?: unknown; nextCursor?: unknown };
  if (!Array.isArray(tools)) return bad('has no "tools" array in its result');
  const unnamed = tools.findIndex(
    (t) => typeof t !== 'object' || t === null || typeof (t as ListedTool).name !== 'string',
  );
  if (unnamed >= 0) return bad(`lists a tool without a string "name" (tools[${unnamed}])`);
  if (nextCursor !== undefined && typeof nextCursor !== 'string')
    return bad('has a "nextCursor" that is not a string');
  return {
    kind: 'list',
    tools: tools as ListedTool[],
    more: nextCursor !== undefined,
    render: (kept) => write(JSON.stringify({ ...message, result: { ...result, tools: kept } })),
  };
}

interface Response {
  readonly jsonrpc: '2.0';
  readonly id: JsonRpcId;
  readonly result?: unknown;
  readonly error?: unknown;
}

/** A JSON-RPC 2.0 response (§ 5): an id, a result or an error, no method. */
function isResponse(m: unknown): m is Response {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return false;
  const r = m as Record<string, unknown>;
  return r.jsonrpc === '2.0' && 'id' in r && !('method' in r) && 'result' in r !== 'error' in r;
}

/** Anything a client could take for a response: an object with a `result` or an `error`. */
function answers(m: unknown): m is { id?: unknown } {
  return typeof m === 'object' && m !== null && ('result' in m || 'error' in m);
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
