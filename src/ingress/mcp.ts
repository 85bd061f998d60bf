import type { IncomingHttpHeaders } from 'node:http';
import { isTrajgateError } from '../errors.js';
import type { EventInput } from '../event/event.js';
import type { ToolMap } from '../event/tool-map.js';
import type { ToolTarget } from '../event/tool-map.js';
import { toolTargets } from '../event/tool-map.js';
import type { RootsChecked } from './roots.js';
import { rootsInside } from './roots.js';
import { isProtocolMethod, methodTargets } from './mcp-methods.js';
import { judgedPaths } from './tool-paths.js';

export type JsonRpcId = string | number | null;

/** What the bridge does with one MCP message; `body` is what goes upstream if it goes. */
export type McpMessage =
  /** MCP's own protocol (initialize, tools/list, notifications, responses): no event. */
  | {
      readonly kind: 'pass';
      readonly id: JsonRpcId;
      /** Its method, or `response` for a response: what a held record names. */
      readonly what: string;
      /** A request, answered with a JSON-RPC response (not a notification nor a response). */
      readonly request: boolean;
      readonly body: Buffer;
      /** A roots/list answer, as checked and forwarded; null for other messages. */
      readonly roots: RootsChecked | null;
    }
  /** A judged method, forwarded only if every event it makes is allowed (see resolveCall). */
  | McpCall
  | McpInvalid;

export interface McpCall {
  readonly kind: 'call';
  readonly id: JsonRpcId;
  /** `tools/call NAME`, or the method: how its events and refusals name it. */
  readonly what: string;
  readonly request: boolean;
  /** Its targets; none for a mapped tool that names no path (still held while paused). */
  readonly targets: readonly ToolTarget[];
  readonly message: object;
}

/** Malformed (400) or a path refused for the model to read (200): answered here. */
export interface McpInvalid {
  readonly kind: 'invalid';
  readonly id: JsonRpcId;
  readonly code: number;
  readonly message: string;
  readonly status: 200 | 400 | 404;
}

/** JSON-RPC 2.0 error codes (§ 5.1). */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;
/** Implementation-defined (-32000 to -32099): refused by trajgate's policy. */
export const REFUSED = -32001;

/** Revisions from which Mcp-Method is required on requests (SEP-2243). */
const HEADERS_REQUIRED_FROM = '2026-07-28';
const BASE64_SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;

/** Longest method name read: a name is a journaled target, and MCP's are short. */
const MAX_METHOD = 256;

/**
 * Reads one MCP message, parsed from a POST body (streamable HTTP, 2025-11-25 and 2026-07-28).
 * Batches are refused: MCP dropped them (2025-06-18) and one message per request keeps one
 * verdict per request. Mcp-Method / Mcp-Name, when sent (required from 2026-07-28), must match
 * the body, or an intermediary routing on headers would judge a different call than the server
 * runs. Every method but MCP's own protocol is judged (mcp-methods.ts). The message is
 * re-serialised with its paths resolved against `workspace` and a roots/list answer cut to the
 * workspace: the server receives what was judged, not the client's bytes.
 */
export function readMcpMessage(
  value: unknown,
  headers: IncomingHttpHeaders,
  tools: ToolMap,
  workspace: string,
): McpMessage {
  if (Array.isArray(value)) {
    return invalid(
      null,
      INVALID_REQUEST,
      'JSON-RPC batches are not accepted; send one message per request',
    );
  }
  if (
    typeof value !== 'object' ||
    value === null ||
    (value as { jsonrpc?: unknown }).jsonrpc !== '2.0'
  ) {
    return invalid(null, INVALID_REQUEST, 'expected a JSON-RPC 2.0 message object');
  }
  const msg = value as { id?: unknown; method?: unknown; params?: unknown; result?: unknown };
  const id = typeof msg.id === 'string' || typeof msg.id === 'number' ? msg.id : null;
  const problem = shapeProblem(msg) ?? checkStandardHeaders(msg, headers);
  if (problem) return invalid(id, INVALID_REQUEST, problem);
  const method = msg.method;
  if (method === undefined) return passed(msg, id, workspace);
  const request = 'id' in msg;
  if (isProtocolMethod(method as string)) {
    return { kind: 'pass', id, what: method as string, request, body: serialise(msg), roots: null };
  }
  const params = (msg.params ?? {}) as Record<string, unknown>;
  try {
    if (method !== 'tools/call') {
      const targets = methodTargets(method as string, params);
      return { kind: 'call', id, what: method as string, request, targets, message: msg };
    }
    if (Array.isArray(params))
      return invalid(id, INVALID_PARAMS, 'tools/call needs params as an object, not an array');
    const { name, arguments: args = {} } = params as { name?: unknown; arguments?: unknown };
    if (typeof name !== 'string' || name === '') {
      return invalid(id, INVALID_PARAMS, 'tools/call needs params with a string "name"');
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return invalid(id, INVALID_PARAMS, `tools/call ${name}: "arguments" must be an object`);
    }
    const targets = toolTargets(tools, name, args as Record<string, unknown>) ?? [
      { kind: 'tool', target: name, set: () => undefined },
    ];
    return { kind: 'call', id, what: `tools/call ${name}`, request, targets, message: msg };
  } catch (err) {
    if (!isTrajgateError(err)) throw err;
    // A file: URI servers read differently is answered for the model, as a tool path is.
    const status = err.code === 'E_PATH_REFUSED' ? (200 as const) : (400 as const);
    return { ...invalid(id, INVALID_PARAMS, `trajgate: ${method}: ${err.message}`), status };
  }
}

/** What makes a message no JSON-RPC 2.0 request, notification or response (§ 4, § 5). */
function shapeProblem(msg: {
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
}): string | null {
  if ('id' in msg && msg.id !== null && typeof msg.id !== 'string' && typeof msg.id !== 'number')
    return '"id" must be a string, a number or null';
  if (!('method' in msg)) {
    if ('result' in msg || 'error' in msg) return 'id' in msg ? null : 'a response needs an "id"';
    return 'a message needs a "method" (a request or notification) or a "result" or "error"';
  }
  // Which half a peer acts on is its choice: the SDK drops it, others may not.
  if ('result' in msg || 'error' in msg) return 'a message is a request or a response, not both';
  if (typeof msg.method !== 'string' || msg.method === '')
    return '"method" must be a non-empty string';
  if (msg.method.length > MAX_METHOD) return `"method" is longer than ${MAX_METHOD} characters`;
  if ('params' in msg && (typeof msg.params !== 'object' || msg.params === null))
    return '"params" must be an object or an array';
  return null;
}

/**
 * A call's events and the body to forward, its paths resolved now and written into it. Called
 * once the call's turn has come (SessionOrder): resolved earlier, an earlier call of the same
 * session could still change what they lead to. A refused spelling is answered for the model.
 */
export function resolveCall(
  call: McpCall,
  workspace: string,
): { kind: 'resolved'; events: EventInput[]; body: Buffer } | McpInvalid {
  try {
    const events = judgedPaths(call.targets, workspace);
    return { kind: 'resolved', events, body: serialise(call.message) };
  } catch (err) {
    if (!isTrajgateError(err) || err.code !== 'E_PATH_REFUSED') throw err;
    const message = `trajgate: ${call.what}: ${err.message}`;
    return { kind: 'invalid', id: call.id, code: INVALID_PARAMS, message, status: 200 };
  }
}

function passed(
  msg: { method?: unknown; result?: unknown },
  id: JsonRpcId,
  workspace: string,
): McpMessage {
  const result = msg.result as { roots?: unknown } | null | undefined;
  const answersRoots =
    typeof result === 'object' && result !== null && Object.hasOwn(result, 'roots');
  const what = 'response';
  if (!answersRoots)
    return { kind: 'pass', id, what, request: false, body: serialise(msg), roots: null };
  if (!Array.isArray(result.roots)) return invalid(id, INVALID_PARAMS, '"roots" must be an array');
  const roots = rootsInside(result.roots, workspace);
  result.roots = roots.kept;
  return { kind: 'pass', id, what, request: false, body: serialise(msg), roots };
}

const serialise = (msg: object): Buffer => Buffer.from(JSON.stringify(msg));

/** A JSON-RPC error response body, for refusals and malformed messages alike. */
export function jsonRpcError(id: JsonRpcId, code: number, message: string, data?: object): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    error: { code, message, ...(data ? { data } : {}) },
  });
}

function invalid(id: JsonRpcId, code: number, message: string): McpInvalid {
  return { kind: 'invalid', id, code, message, status: 400 };
}

function checkStandardHeaders(
  msg: { id?: unknown; method?: unknown; params?: unknown },
  headers: IncomingHttpHeaders,
): string | null {
  const method = typeof msg.method === 'string' ? msg.method : undefined;
  const methodHeader = single(headers['mcp-method']);
  const version = single(headers['mcp-protocol-version']);
  const isRequest = method !== undefined && msg.id !== undefined;
  if (methodHeader === undefined) {
    return isRequest && version !== undefined && version >= HEADERS_REQUIRED_FROM
      ? `the Mcp-Method header is required from protocol ${HEADERS_REQUIRED_FROM} (body method ${method})`
      : null;
  }
  if (methodHeader !== method) {
    return `the Mcp-Method header (${methodHeader}) does not match the body's method (${method ?? 'none'})`;
  }
  const nameHeader = single(headers['mcp-name']);
  if (nameHeader === undefined) return null;
  const params = (typeof msg.params === 'object' && msg.params !== null ? msg.params : {}) as {
    name?: unknown;
    uri?: unknown;
  };
  const bodyName =
    typeof params.name === 'string'
      ? params.name
      : typeof params.uri === 'string'
        ? params.uri
        : undefined;
  const sentinel = BASE64_SENTINEL.exec(nameHeader);
  const headerName = sentinel
    ? Buffer.from(sentinel[1] as string, 'base64').toString('utf8')
    : nameHeader;
  return headerName === bodyName
    ? null
    : `the Mcp-Name header (${headerName}) does not match the body (${bodyName ?? 'none'})`;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}
