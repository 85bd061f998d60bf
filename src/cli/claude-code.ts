import { isAbsolute } from 'node:path';
import type { HookEvent, ToolCall } from './claude-code-tools.js';
import { invalid, noHome, toolEvent } from './claude-code-tools.js';

/** What a tool call's result is reported as (`POST /events/result`). */
interface ToolResult {
  readonly kind: string;
  readonly target: string;
  readonly tool: string;
  readonly ok: boolean;
  readonly error?: string;
  /** The runner's id of the call (`tool_use_id`), when it sends one. */
  readonly call?: string;
  /** The call's command line, as its event named it. */
  readonly command?: string;
}

/**
 * What one Claude Code hook input asks of trajgate: judge a call before it runs (PreToolUse,
 * or no `hook_event_name`), record how it ended (PostToolUse, PostToolUseFailure), or nothing:
 * other events carry no tool call, and exit 2 means something else there (Stop: keep going,
 * UserPromptSubmit: erase the prompt), so they are let be.
 */
export type HookAction =
  | { readonly type: 'judge'; readonly event: HookEvent }
  | { readonly type: 'result'; readonly result: ToolResult }
  | { readonly type: 'none'; readonly hook: string };

/** Error texts kept in a result record: enough to see what failed, not a command's output. */
const ERROR_CHARS = 1000;

/** A hook input (JSON on stdin) as what to do; throws E_EVENT_INVALID naming what is wrong. */
export function claudeCodeAction(text: string): HookAction {
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch {
    return invalid('not JSON');
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    return invalid('not a JSON object');
  const hook = (input as Record<string, unknown>).hook_event_name ?? 'PreToolUse';
  if (typeof hook !== 'string') return invalid('"hook_event_name" is not a string');
  const fields = input as Record<string, unknown>;
  if (hook !== 'PreToolUse' && hook !== 'PostToolUse' && hook !== 'PostToolUseFailure')
    return { type: 'none', hook };
  const event = toolEvent(toolCall(fields));
  // The id links the result to its call: without it the result counts as a failure.
  const id = fields.tool_use_id;
  if (id !== undefined && typeof id !== 'string') return invalid('"tool_use_id" is not a string');
  const call = id === undefined || id === '' ? {} : { call: id };
  if (hook === 'PreToolUse') return { type: 'judge', event: { ...event, ...call } };
  const error = failure(hook, fields);
  return {
    type: 'result',
    result: {
      kind: event.kind,
      target: event.target,
      tool: fields.tool_name as string,
      ok: error === null,
      ...(error === null ? {} : { error }),
      ...call,
      ...(event.command === undefined ? {} : { command: event.command }),
    },
  };
}

/**
 * A hook input's tool call, read lazily: only the fields its tool's rule asks for are checked.
 * Relative paths are joined to `cwd` without normalising `..`, so the gateway judges both of
 * its readings.
 */
function toolCall(fields: Record<string, unknown>): ToolCall {
  const tool = fields.tool_name;
  if (typeof tool !== 'string' || tool === '') return invalid('no "tool_name"');
  const input = fields.tool_input ?? {};
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    return invalid('"tool_input" is not an object');
  const args = input as Record<string, unknown>;
  const arg = (name: string): string | null => {
    const v = args[name];
    if (v === undefined || v === null || v === '') return null;
    return typeof v === 'string' ? v : invalid(`"tool_input.${name}" is not a string`);
  };
  const cwd = (): string => {
    const v = fields.cwd;
    return typeof v === 'string' && isAbsolute(v) ? v : invalid('no absolute "cwd"');
  };
  const path = (name: string): string => {
    const value = arg(name);
    if (value === null) return cwd();
    noHome(value, name);
    return isAbsolute(value) ? value : `${cwd().replace(/\/+$/, '')}/${value}`;
  };
  return { tool, input: args, arg, path, cwd };
}

/**
 * Why the call failed, or null: PostToolUseFailure's `error`, else any sign of failure a
 * runner version may send (`is_error`, `error`, `success: false`, an interruption), at the top
 * level or in `tool_response`.
 */
function failure(hook: string, input: Record<string, unknown>): string | null {
  const response = input.tool_response;
  const places = [input, typeof response === 'object' && response !== null ? response : {}];
  for (const place of places as Record<string, unknown>[]) {
    const why =
      text(place.error) ??
      text(place.error_message) ??
      (place.is_error === true || place.success === false ? 'the tool reported an error' : null) ??
      (place.is_interrupt === true || place.interrupted === true ? 'interrupted' : null);
    if (why !== null) return why;
  }
  return hook === 'PostToolUseFailure' ? 'the tool failed' : null;
}

function text(value: unknown): string | null {
  if (typeof value !== 'string' || value.trim() === '') return null;
  const line = value.trim().replace(/\s+/g, ' ');
  return line.length > ERROR_CHARS ? line.slice(0, ERROR_CHARS) + '…' : line;
}
