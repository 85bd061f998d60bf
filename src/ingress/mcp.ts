import type { IncomingHttpHeaders } from 'node:http';
import { isTrajgateError } from '../errors.js';
import type { EventInput } from '../event/event.js';
import type { ToolMap } from '../event/tool-map.js';
import type { ToolTarget } from '../event/tool-map.js';
import { toolTargets } from '../event/tool-map.js';
import type { RootsChecked } from './roots.js';
import { rootsInside } from './roots.js';
import { judgedPaths } from './tool-paths.js';

export type JsonRpcId = string | number | null;

/** What the bridge does with one MCP message; `body` is what goes upstream if it goes. */
export type McpMessage =
  /** Not a tool call (initialize, tools/list, notifications, responses): forwarded. */
  | {
      readonly kind: 'pass';
      readonly id: JsonRpcId;
      readonly body: Buffer;
      /** A roots/list answer, as checked and forwarded; null for other messages. */
      readonly roots: RootsChecked | null;
    }
  /** A tools/call, forwarded only if every event it makes is allowed (see resolveCall). */
  | McpCall
  | McpInvalid;

export interface McpCall {
  readonly kind: 'call';
  readonly id: JsonRpcId;
  readonly tool: string;
  /** Its mapped targets, or null for a tool the map does not know. */
  readonly targets: readonly ToolTarget[] | null;
  readonly message: object;
}

/** Malformed (400) or a path refused for the model to read (200): answered here. */
export interface McpInvalid {
  readonly kind: 'invalid';
  readonly id: JsonRpcId;
  readonly code: number;
  readonly message: string;
  readonly status: 200 | 400;
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

/**
 * Reads one MCP message, parsed from a POST body (streamable HTTP, 2025-11-25 and 2026-07-28).
 * Batches are refused: MCP dropped them (2025-06-18) and one call per request keeps one verdict
 * per request. Mcp-Method / Mcp-Name, when sent (required from 2026-07-28), must match the body,
 * or an intermediary routing on headers would judge a different call than the server runs. The
 * message is re-serialised with its tool paths resolved against `workspace` and a roots/list
 * answer cut to the workspace: the server receives what was judged, not the client's bytes.
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
  const mismatch = checkStandardHeaders(msg, headers);
  if (mismatch) return invalid(id, INVALID_REQUEST, mismatch);
  if ('method' in msg && ('result' in msg || 'error' in msg)) {
    // Which half a peer acts on is its choice: the SDK drops it, others may not.
    return invalid(id, INVALID_REQUEST, 'a message is a request or a response, not both');
  }
  if (msg.method !== 'tools/call') return passed(msg, id, workspace);
  const params = msg.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    return invalid(id, INVALID_PARAMS, 'tools/call needs params with a "name"');
  }
  const { name, arguments: args = {} } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string' || name === '') {
    return invalid(id, INVALID_PARAMS, 'tools/call needs a string "name"');
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return invalid(id, INVALID_PARAMS, `tools/call ${name}: "arguments" must be an object`);
  }
  try {
    const targets = toolTargets(tools, name, args as Record<string, unknown>);
    return { kind: 'call', id, tool: name, targets, message: msg };
  } catch (err) {
    if (!isTrajgateError(err)) throw err;
    return invalid(id, INVALID_PARAMS, err.message);
  }
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
    const events = call.targets
      ? judgedPaths(call.targets, workspace)
      : [{ kind: 'tool', target: call.tool }];
    return { kind: 'resolved', events, body: serialise(call.message) };
  } catch (err) {
    if (!isTrajgateError(err) || err.code !== 'E_PATH_REFUSED') throw err;
    const message = `trajgate: tools/call ${call.tool}: ${err.message}`;
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
    msg.method === undefined &&
    typeof result === 'object' &&
    result !== null &&
    Object.hasOwn(result, 'roots');
  if (!answersRoots) return { kind: 'pass', id, body: serialise(msg), roots: null };
  if (!Array.isArray(result.roots)) return invalid(id, INVALID_PARAMS, '"roots" must be an array');
  const roots = rootsInside(result.roots, workspace);
  result.roots = roots.kept;
  return { kind: 'pass', id, body: serialise(msg), roots };
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
