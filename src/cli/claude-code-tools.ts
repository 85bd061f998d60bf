import { isAbsolute, posix } from 'node:path';
import { TrajgateError } from '../errors.js';
import type { EventInput } from '../event/event.js';

/** What a hook asks the gateway: an event, and for an MCP tool its arguments (ingest maps them). */
export interface HookEvent extends EventInput {
  readonly arguments?: Readonly<Record<string, unknown>>;
}

/** One tool call's input, read field by field; each accessor refuses a value of the wrong type. */
export interface ToolCall {
  readonly tool: string;
  readonly input: Readonly<Record<string, unknown>>;
  /** A string argument, null when absent or empty. */
  arg(name: string): string | null;
  /** A path argument: absolute, or joined to `cwd` (`..` kept); `cwd` itself when absent. */
  path(name: string): string;
  cwd(): string;
}

type Rule = (call: ToolCall) => HookEvent;

/** Touches nothing outside the agent: journaled, counted by no default boundary. */
const internal: Rule = ({ tool }) => ({ kind: 'internal', target: tool });
/** Sends data to another party: a `tool` event by name, counted as `bridge.unmapped` says. */
const elsewhere: Rule = ({ tool }) => ({ kind: 'tool', target: tool });
const read =
  (arg: string): Rule =>
  (c) => ({ kind: 'read', target: c.path(arg) });
/** Listings and searches: their answer can name (or quote) anything under their folder. */
const tree =
  (root: (c: ToolCall) => string): Rule =>
  (c) => ({ kind: 'read', target: root(c), tree: true });
const write =
  (arg: string, fallback = arg): Rule =>
  (c) => {
    const name = c.arg(arg) === null ? fallback : arg;
    if (c.arg(name) === null) invalid(`${c.tool} without "tool_input.${arg}"`);
    return { kind: 'write', target: c.path(name) };
  };
/**
 * A command line run in `cwd`: Bash, PowerShell, a command Monitor; the line goes with it (the
 * gateway redacts it before anything keeps it).
 */
const shell: Rule = (c) => {
  const line = c.arg('command');
  return line === null
    ? { kind: 'command', target: c.cwd() }
    : { kind: 'command', target: c.cwd(), command: line };
};
/** An MCP call: the gateway maps it through the bridge's tool map when its server is the bridge's. */
const mcp: Rule = ({ tool, input }) => ({ kind: 'tool', target: tool, arguments: elided(input) });

/**
 * Every Claude Code built-in tool (the 2026 set, and older names still sent) by what it does,
 * as docs/hooks.md § Claude Code lists them. A tool not named here is a `tool`
 * event by name.
 */
const TOOLS: Readonly<Record<string, Rule>> = {
  // Reads: the file, or the tree a listing or search can reach.
  Read: read('file_path'),
  NotebookRead: read('notebook_path'),
  LSP: read('filePath'),
  Glob: tree((c) => {
    const pattern = c.arg('pattern');
    return pattern === null ? c.path('path') : globRoot(c.path('path'), noHome(pattern, 'pattern'));
  }),
  // A type (`py`, `ts`) picks files by name anywhere under the path: it narrows no folder.
  Grep: tree((c) => {
    c.arg('type');
    const glob = c.arg('glob');
    return glob === null ? c.path('path') : grepRoot(c.path('path'), noHome(glob, 'glob'));
  }),
  LS: tree((c) => c.path('path')),
  // Writes.
  Write: write('file_path'),
  Edit: write('file_path'),
  MultiEdit: write('file_path'),
  NotebookEdit: write('notebook_path', 'file_path'),
  // Commands (a Monitor of a WebSocket is a GET of its URL); a worktree is made by git.
  Bash: shell,
  PowerShell: shell,
  Monitor: (c) => (c.input.ws === undefined || c.input.ws === null ? monitorCommand(c) : socket(c)),
  EnterWorktree: (c) => ({ kind: 'command', target: c.path('path') }),
  ExitWorktree: (c) => ({ kind: 'command', target: c.path('path') }),
  // The network: what the runner's own client fetches.
  WebFetch: (c) => ({
    kind: 'network',
    target: c.arg('url') ?? invalid('WebFetch without "tool_input.url"'),
    method: 'GET',
  }),
  // MCP resources: read through the gateway's map when the server is the bridge's.
  ReadMcpResourceTool: mcp,
  ListMcpResourcesTool: internal,
  // The agent's own work: its task list, sub-agents and workflows (their calls come through
  // this hook too), background shells, plan mode, questions, skills, session crons, tool
  // search; WebSearch runs at the model provider, which holds the conversation already.
  Agent: internal,
  Task: internal,
  Workflow: internal,
  TeamCreate: internal,
  TeamDelete: internal,
  TaskCreate: internal,
  TaskGet: internal,
  TaskList: internal,
  TaskUpdate: internal,
  TaskStop: internal,
  TaskOutput: internal,
  BashOutput: internal,
  KillShell: internal,
  KillBash: internal,
  TodoWrite: internal,
  TodoRead: internal,
  CronCreate: internal,
  CronDelete: internal,
  CronList: internal,
  ScheduleWakeup: internal,
  EnterPlanMode: internal,
  ExitPlanMode: internal,
  exit_plan_mode: internal,
  AskUserQuestion: internal,
  Skill: internal,
  SlashCommand: internal,
  ToolSearch: internal,
  WaitForMcpServers: internal,
  WebSearch: internal,
  // Data sent to another party (a published page, a phone, another session, claude.ai).
  Artifact: elsewhere,
  ShareOnboardingGuide: elsewhere,
  RemoteTrigger: elsewhere,
  PushNotification: elsewhere,
  SendMessage: elsewhere,
  ListAgents: elsewhere,
};

/** The event a tool call is judged as (TOOLS; `mcp__*` with its arguments; else by name). */
export function toolEvent(call: ToolCall): HookEvent {
  const rule = Object.hasOwn(TOOLS, call.tool) ? TOOLS[call.tool] : undefined;
  if (rule !== undefined) return rule(call);
  return call.tool.startsWith('mcp__') ? mcp(call) : elsewhere(call);
}

export const invalid = (why: string): never => {
  throw new TrajgateError('E_EVENT_INVALID', `hook input: ${why}`);
};

/** Whether `~` or `file:` is expanded is the runner's business: refused, not guessed. */
export function noHome(value: string, name: string): string {
  return value.startsWith('~') || /^file:/i.test(value)
    ? invalid(`"tool_input.${name}" ${JSON.stringify(value)}: give an absolute path`)
    : value;
}

function monitorCommand(c: ToolCall): HookEvent {
  if (c.arg('command') === null) invalid('Monitor without "tool_input.command" or "tool_input.ws"');
  return shell(c);
}

/** A WebSocket Monitor opens its URL with a GET (RFC 6455 § 4.1), ws as http, wss as https. */
function socket(c: ToolCall): HookEvent {
  if (c.arg('command') !== null) invalid('Monitor with both "command" and "ws"');
  const ws = c.input.ws as Record<string, unknown>;
  const url = typeof ws === 'object' && !Array.isArray(ws) ? ws.url : undefined;
  if (typeof url !== 'string') return invalid('"tool_input.ws.url" is not a string');
  const scheme = /^wss?:\/\//i.exec(url);
  if (scheme === null)
    return invalid(`"tool_input.ws.url" ${JSON.stringify(url)} is not ws:// or wss://`);
  const http = scheme[0].toLowerCase() === 'wss://' ? 'https://' : 'http://';
  return { kind: 'network', target: http + url.slice(scheme[0].length), method: 'GET' };
}

/**
 * No path is longer than PATH_MAX (4096 bytes on Linux): longer strings (a file's content, an
 * edit's text) are sent empty, which keeps a call under the ingest limit. The gateway reads
 * only path arguments; one that came empty is refused there.
 */
const PATH_MAX = 4096;
function elided(value: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const cut = (v: unknown): unknown =>
    typeof v === 'string'
      ? v.length > PATH_MAX
        ? ''
        : v
      : Array.isArray(v)
        ? v.map(cut)
        : typeof v === 'object' && v !== null
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cut(x)]))
          : v;
  return cut(value) as Record<string, unknown>;
}

/** Glob syntax (and ripgrep's escape): a pattern reads from the folder before it. */
const GLOB_MAGIC = /[*?[\]{}\\]/;

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
