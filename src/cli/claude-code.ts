import { isAbsolute, posix } from 'node:path';
import { TrajgateError } from '../errors.js';
import type { EventInput } from '../event/event.js';

/** What a tool call's result is reported as (`POST /events/result`). */
interface ToolResult {
  readonly kind: string;
  readonly target: string;
  /** The call's command line, as its event named it. */
  readonly command?: string;
  readonly tool: string;
  readonly ok: boolean;
  readonly error?: string;
  /** The runner's id of the call (`tool_use_id`), when it sends one. */
  readonly call?: string;
}

/**
 * What one Claude Code hook input asks of trajgate: judge a call before it runs (PreToolUse,
 * or no `hook_event_name`), record how it ended (PostToolUse, PostToolUseFailure), or nothing:
 * other events carry no tool call, and exit 2 means something else there (Stop: keep going,
 * UserPromptSubmit: erase the prompt), so they are let be.
 */
export type HookAction =
  | { readonly type: 'judge'; readonly event: EventInput }
  | { readonly type: 'result'; readonly result: ToolResult }
  | { readonly type: 'none'; readonly hook: string };

/** Error texts kept in a result record: enough to see what failed, not a command's output. */
const ERROR_CHARS = 1000;
/** Tools that list or search a folder: their answer can carry anything under it. */
const TREE_READS: ReadonlySet<string> = new Set(['Glob', 'Grep', 'LS']);
const WRITES: Readonly<Record<string, string>> = {
  Write: 'file_path',
  Edit: 'file_path',
  MultiEdit: 'file_path',
  NotebookEdit: 'notebook_path',
};
/** Glob syntax (and ripgrep's escape): a pattern reads from the folder before it. */
const GLOB_MAGIC = /[*?[\]{}\\]/;

const invalid = (why: string): never => {
  throw new TrajgateError('E_EVENT_INVALID', `hook input: ${why}`);
};

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
  const event = claudeCodeEvent(fields);
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
      ...(event.command === undefined ? {} : { command: event.command }),
      tool: fields.tool_name as string,
      ok: error === null,
      ...(error === null ? {} : { error }),
      ...call,
    },
  };
}

/**
 * The event a tool call is judged as, by what the tool does: Read reads its file, Glob/Grep/LS
 * read the tree under their path (default: `cwd`) narrowed by their pattern's fixed part,
 * Write/Edit/MultiEdit/NotebookEdit write theirs, Bash runs its command in `cwd`, WebFetch GETs
 * its URL; anything else is a `tool` event by name. Relative paths are joined to `cwd` without
 * normalising `..`, so the gateway judges both of its readings.
 */
function claudeCodeEvent(input: Record<string, unknown>): EventInput {
  const tool = input.tool_name;
  if (typeof tool !== 'string' || tool === '') return invalid('no "tool_name"');
  const args = input.tool_input ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return invalid('"tool_input" is not an object');
  const arg = (name: string): string | null => {
    const v = (args as Record<string, unknown>)[name];
    if (v === undefined || v === null || v === '') return null;
    return typeof v === 'string' ? v : invalid(`"tool_input.${name}" is not a string`);
  };
  const cwd = (): string => {
    const v = input.cwd;
    return typeof v === 'string' && isAbsolute(v) ? v : invalid('no absolute "cwd"');
  };
  // Whether `~` or `file:` is expanded is the runner's business: refused, not guessed.
  const refuseHome = (value: string, name: string): string =>
    value.startsWith('~') || /^file:/i.test(value)
      ? invalid(`"tool_input.${name}" ${JSON.stringify(value)}: give an absolute path`)
      : value;
  const path = (name: string): string => {
    const value = arg(name);
    if (value === null) return cwd();
    refuseHome(value, name);
    return isAbsolute(value) ? value : `${cwd().replace(/\/+$/, '')}/${value}`;
  };
  if (tool === 'Read') return { kind: 'read', target: path('file_path') };
  if (TREE_READS.has(tool)) {
    const base = path('path');
    let target = base;
    if (tool === 'Glob') {
      const pattern = arg('pattern');
      if (pattern !== null) target = globRoot(base, refuseHome(pattern, 'pattern'));
    } else if (tool === 'Grep') {
      // A type (`py`, `ts`) picks files by name anywhere under the path: it narrows no folder.
      arg('type');
      const glob = arg('glob');
      if (glob !== null) target = grepRoot(base, refuseHome(glob, 'glob'));
    }
    return { kind: 'read', target, tree: true };
  }
  const write = WRITES[tool];
  if (write !== undefined) {
    const name = tool === 'NotebookEdit' && arg(write) === null ? 'file_path' : write;
    if (arg(name) === null) return invalid(`${tool} without "tool_input.${write}"`);
    return { kind: 'write', target: path(name) };
  }
  if (tool === 'Bash') return commandIn(cwd(), arg('command'));
  if (tool === 'WebFetch') {
    const url = arg('url') ?? invalid('WebFetch without "tool_input.url"');
    return { kind: 'network', target: url, method: 'GET' };
  }
  return { kind: 'tool', target: tool };
}

/** A command run in `cwd`, with its command line when the call has one (the gateway redacts it). */
function commandIn(cwd: string, line: string | null): EventInput {
  return line === null
    ? { kind: 'command', target: cwd }
    : { kind: 'command', target: cwd, command: line };
}

/**
 * The folder a Glob pattern can list: `src/**\/*.ts` → `base/src`; an absolute or `..`
 * pattern reads where it points. One name (`*.pem`, `id_rsa`) may match at any depth, as a
 * ripgrep glob does, and `!` means all but: the whole of `base`.
 */
function globRoot(base: string, pattern: string): string {
  if (pattern.startsWith('!')) return base;
  if (isAbsolute(pattern)) return fixedPart(pattern.split('/')).join('/') || posix.sep;
  if (!pattern.replace(/\/+$/, '').includes('/')) return base;
  return [base.replace(/\/+$/, ''), ...fixedPart(pattern.split('/'))].join('/') || posix.sep;
}

/**
 * The folder a Grep glob narrows its search to. ripgrep searches only under `path` and reads
 * a glob relative to it (a leading `/` anchors it there), one without an inner `/` at any
 * depth, `!` as all but: only a fixed leading part without `.` or `..` narrows it.
 */
function grepRoot(base: string, glob: string): string {
  const inner = glob.replace(/^\/+/, '').replace(/\/+$/, '');
  if (glob.startsWith('!') || !inner.includes('/')) return base;
  const fixed = fixedPart(inner.split('/'));
  if (fixed.length === 0 || fixed.some((s) => s === '' || s === '.' || s === '..')) return base;
  return [base.replace(/\/+$/, ''), ...fixed].join('/');
}

/** The segments before the first one holding glob syntax. */
function fixedPart(segments: string[]): string[] {
  const magic = segments.findIndex((s) => GLOB_MAGIC.test(s));
  return magic === -1 ? segments : segments.slice(0, magic);
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
