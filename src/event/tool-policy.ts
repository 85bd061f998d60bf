import { TrajgateError } from '../errors.js';

/** What an `allow`/`deny` list of tool patterns is read from. */
export interface ToolLists {
  readonly allow: readonly string[];
  readonly deny: readonly string[];
}

/** What the tool policy is compiled from (schema output: `bridge.toolPolicy` is bridge.tools' lists). */
export interface ToolPolicyConfig {
  readonly bridge: { readonly toolPolicy: ToolLists };
  readonly agents:
    | readonly {
        readonly id: string;
        readonly roles: readonly string[];
        readonly tools: ToolLists;
      }[]
    | null;
  readonly roles: Readonly<Record<string, { readonly tools: ToolLists }>>;
}

/** A server name as `mcp__NAME__TOOL` and `bridge.name` spell it. */
const SERVER = /^[A-Za-z0-9_-]{1,64}$/;
/** Tool names (MCP's SEP-986 set: letters, digits, _ - . /) with `*` and `?` as wildcards. */
const GLOB = /^[A-Za-z0-9_.\/*?-]{1,256}$/;

interface ToolPattern {
  readonly text: string;
  /** null: any server. */
  readonly server: string | null;
  readonly tool: RegExp;
}

/**
 * Why `text` is no tool pattern (`GLOB` or `SERVER:GLOB`; `*` any run of characters, `?` one,
 * case-sensitive as MCP tool names are), or null when it is one.
 */
export function toolPatternProblem(text: string): string | null {
  if (text === '') return 'a tool pattern must not be empty';
  const colon = text.indexOf(':');
  const server = colon < 0 ? null : text.slice(0, colon);
  const glob = colon < 0 ? text : text.slice(colon + 1);
  if (server !== null && !SERVER.test(server))
    return `${JSON.stringify(text)}: the server name before ":" must be 1 to 64 letters, digits, _ or - (as mcp__NAME__TOOL spells it)`;
  if (!GLOB.test(glob))
    return `${JSON.stringify(text)}: expected a tool name or glob (letters, digits, _ - . /, with * for any run of characters and ? for one), optionally after SERVER:`;
  return null;
}

function compilePattern(text: string): ToolPattern {
  const problem = toolPatternProblem(text);
  if (problem !== null) throw new TrajgateError('E_PATTERN_INVALID', problem);
  const colon = text.indexOf(':');
  const glob = colon < 0 ? text : text.slice(colon + 1);
  const source = glob
    .replace(/[.\/-]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return {
    text,
    server: colon < 0 ? null : text.slice(0, colon),
    tool: new RegExp(`^${source}$`, 'su'),
  };
}

/** One configured list, named as its key is for the reason a refusal gives. */
interface NamedList {
  readonly key: string;
  readonly patterns: readonly ToolPattern[];
}

const named = (key: string, texts: readonly string[]): NamedList => ({
  key,
  patterns: texts.map(compilePattern),
});

const matching = (list: NamedList, server: string, tool: string): ToolPattern | undefined =>
  list.patterns.find((p) => (p.server === null || p.server === server) && p.tool.test(tool));

/** The lists that apply to one session: every `deny`, and the `allow` lists (their union). */
interface Applying {
  readonly who: string | null;
  readonly allow: readonly NamedList[];
  readonly deny: readonly NamedList[];
}

/** Which tools a session's agent may see and call. */
export interface ToolPolicy {
  /**
   * Why `session` may not call `tool` of `server`, naming the list that decided, or null when
   * it may. Any matching `deny` refuses; else, when any `allow` list applies, one must match.
   */
  refuses(session: string, server: string, tool: string): string | null;
}

/**
 * Compiles `bridge.tools`, `roles.NAME.tools` and `agents[].tools` once per config. An agent's
 * allowed tools are the union of the `allow` lists of bridge.tools, its roles and its own (none
 * given: every tool); a `deny` at any level refuses and wins. A session that is no configured
 * agent (no agents: sessions are client addresses) has bridge.tools only. Throws
 * E_PATTERN_INVALID for a pattern the schema would have refused.
 */
export function compileToolPolicy(config: ToolPolicyConfig): ToolPolicy {
  const bridge = config.bridge.toolPolicy;
  const base: Applying = {
    who: null,
    allow: nonEmpty([named('bridge.tools.allow', bridge.allow)]),
    deny: nonEmpty([named('bridge.tools.deny', bridge.deny)]),
  };
  const agents = new Map<string, Applying>();
  for (const a of config.agents ?? []) {
    const roles = a.roles.map((r) => ({ role: r, tools: config.roles[r]?.tools }));
    const lists = (which: keyof ToolLists) => [
      ...roles.map(({ role, tools }) =>
        named(`roles.${role}.tools.${which}`, tools?.[which] ?? []),
      ),
      named(`agents[${a.id}].tools.${which}`, a.tools[which]),
    ];
    agents.set(a.id, {
      who: a.id,
      allow: [...base.allow, ...nonEmpty(lists('allow'))],
      deny: [...base.deny, ...nonEmpty(lists('deny'))],
    });
  }
  return {
    refuses(session, server, tool) {
      const applying = agents.get(session) ?? base;
      for (const list of applying.deny) {
        const hit = matching(list, server, tool);
        if (hit !== undefined) return `tool ${tool} is denied by ${list.key}: ${hit.text}`;
      }
      if (applying.allow.length === 0) return null;
      if (applying.allow.some((list) => matching(list, server, tool) !== undefined)) return null;
      const to = applying.who === null ? '' : ` to ${applying.who}`;
      const keys = applying.allow.map((l) => l.key).join(', ');
      return `tool ${tool} is not in the tools allowed${to} (${keys})`;
    },
  };
}

const nonEmpty = (lists: readonly NamedList[]): NamedList[] =>
  lists.filter((l) => l.patterns.length > 0);
