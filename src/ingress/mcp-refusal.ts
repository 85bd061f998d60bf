import type { Refusal } from '../action/refusal.js';
import { refusalText } from '../action/refusal.js';
import { httpRefusal } from '../action/respond.js';
import type { JsonRpcId } from './mcp.js';
import { jsonRpcError, REFUSED } from './mcp.js';

/** A refusal as the bridge's MCP path answers it: status, headers and a JSON-RPC error. */
export interface McpRefusal {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
}

/**
 * The MCP rendering of a refusal: a JSON-RPC error whose message is the text written for the
 * model (the proxy's body, trimmed) and whose data are its verdict, boundary and reason. A
 * request (`id` owed an answer) gets it in a 200, so that clients hand it to the model; a
 * notification, response or stream has no id to answer, so it gets the refusal's HTTP status
 * and headers (`X-Trajgate-Verdict`), as on the proxy.
 */
export function mcpRefusal(id: JsonRpcId, request: boolean, refusal: Refusal): McpRefusal {
  const text = jsonRpcError(id, REFUSED, refusalText(refusal).trim(), {
    verdict: refusal.verdict,
    boundary: refusal.boundary,
    reason: refusal.reason.why,
  });
  if (request) return { status: 200, headers: {}, text };
  const { status, headers } = httpRefusal(refusal);
  return { status, headers, text };
}
