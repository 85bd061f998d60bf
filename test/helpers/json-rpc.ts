import type { IncomingHttpHeaders } from 'node:http';
import type { ToolMap } from '../../src/event/tool-map.js';
import { readMcpMessage, resolveCall } from '../../src/ingress/mcp.js';

/** `id: NO_ID` builds a notification (no id member at all). */
export const NO_ID = Symbol('no id');

/** A JSON-RPC 2.0 request (or notification) of `method`. */
export const msg = (method: string, params?: unknown, id: unknown = 1) => ({
  jsonrpc: '2.0',
  ...(id === NO_ID ? {} : { id }),
  method,
  ...(params === undefined ? {} : { params }),
});

/**
 * What the MCP bridge makes of a message and its headers with `tools`: a call resolved (in its
 * turn) against the workspace /w, anything else as read. A string is parsed; an object cloned.
 */
export const readerWith =
  (tools: ToolMap) =>
  (body: unknown, headers: IncomingHttpHeaders = {}) => {
    const value: unknown = typeof body === 'string' ? JSON.parse(body) : structuredClone(body);
    const m = readMcpMessage(value, headers, tools, '/w');
    return m.kind === 'call' ? { ...m, ...resolveCall(m, '/w') } : m;
  };
