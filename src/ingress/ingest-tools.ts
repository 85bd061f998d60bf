import { TrajgateError } from '../errors.js';
import type { EventInput } from '../event/event.js';
import type { ToolMap } from '../event/tool-map.js';
import type { McpCall, McpInvalid } from './mcp.js';
import { readMcpMessage, resolveCall } from './mcp.js';
import type { ToolRefuses } from './tool-refusal.js';
import { refusedHookTool } from './tool-refusal.js';

/**
 * The bridged MCP server as runners name it (`bridge.name`), the bridge's tool map, and the
 * tool policy for the session asking.
 */
export interface BridgedServer {
  readonly name: string | undefined;
  readonly tools: ToolMap;
  readonly refuses: ToolRefuses;
}

/**
 * The events of a runner's `tool` event (ingest, `trajgate replay --hook`). A call of the bridged
 * server is judged as the bridge judges it, by the same code: `mcp__NAME__TOOL` as `tools/call
 * TOOL` (the tool map and its path resolution; a tool the map does not know is the bridge's
 * `tool` event), Claude Code's `ReadMcpResourceTool {server: NAME, uri}` as `resources/read` of
 * the URI. A call that names no path (`list_allowed_directories`) crosses nothing: one `internal`
 * event, so that it is journaled and held while paused as the bridge holds it. Anything else is
 * the one `tool` event it says. Arguments the bridge would refuse are E_EVENT_INVALID (a
 * spelling that depends on the server, E_PATH_REFUSED), with the bridge's reason. An `mcp__`
 * call of a tool the policy does not allow, of any server, is one refused `tool` event.
 */
export function toolCallEvents(
  input: EventInput,
  args: Readonly<Record<string, unknown>>,
  bridge: BridgedServer,
  workspace: string,
): EventInput[] {
  // A tool the policy does not allow is that refusal, of any server, mapped or not.
  const refused = refusedHookTool(bridge.refuses, input.target, bridge.name);
  const message = refused === null ? bridgeMessage(input.target, args, bridge.name) : null;
  if (message === null) return refused === null ? [input] : callOf(input, [refused]);
  // Both methods are judged ones: the bridge reads them as a call or refuses them.
  const read = readMcpMessage(message, {}, bridge.tools, workspace) as McpCall | McpInvalid;
  const resolved = read.kind === 'call' ? resolveCall(read, workspace) : read;
  if (resolved.kind === 'invalid') {
    // Answered for the model on the bridge (200): a path spelling the server reads its own way.
    const code = resolved.status === 200 ? 'E_PATH_REFUSED' : 'E_EVENT_INVALID';
    throw new TrajgateError(code, resolved.message.replace(/^trajgate: /, ''));
  }
  const events: EventInput[] =
    resolved.events.length > 0 ? resolved.events : [{ kind: 'internal', target: input.target }];
  return callOf(input, events);
}

/** A runner's call as `events`: a failure report each, and the call's id on the first. */
function callOf(input: EventInput, events: readonly EventInput[]): EventInput[] {
  // The call's id links its result to the first event, as the bridge's call is one request.
  return events.map((e, i) => ({
    ...e,
    ...(input.failed === true ? { failed: true as const } : {}),
    ...(i === 0 && input.call !== undefined ? { call: input.call } : {}),
  }));
}

/** The MCP message a call of the bridged server is, or null for any other call. */
function bridgeMessage(
  target: string,
  args: Readonly<Record<string, unknown>>,
  name: string | undefined,
): object | null {
  if (name === undefined) return null;
  const request = (method: string, params: object) => ({ jsonrpc: '2.0', id: 0, method, params });
  const prefix = `mcp__${name}__`;
  if (target.startsWith(prefix) && target.length > prefix.length)
    return request('tools/call', { name: target.slice(prefix.length), arguments: { ...args } });
  if (target === 'ReadMcpResourceTool' && args.server === name)
    return request('resources/read', { uri: args.uri });
  return null;
}
