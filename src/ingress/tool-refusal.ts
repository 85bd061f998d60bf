import type { EventInput } from '../event/event.js';

/** Why a session may not call a tool of a server (ToolPolicy.refuses, its session bound). */
export type ToolRefuses = (server: string, tool: string) => string | null;

/**
 * The event a call of a tool the policy does not allow is judged as: a `tool` event (target as
 * an unmapped tool's) marked refused, so that it counts on the `tool` boundary and no verdict,
 * approval or resume lets it through (Event.denied). Null when the tool is allowed.
 */
export function refusedTool(
  refuses: ToolRefuses,
  server: string,
  tool: string,
  target: string,
): EventInput | null {
  const reason = refuses(server, tool);
  return reason === null ? null : { kind: 'tool', target, refused: reason };
}

const PREFIX = 'mcp__';

/**
 * A runner's `mcp__NAME__TOOL` call (Claude Code's naming) refused by the policy, or null.
 * NAME may itself hold `__`, so the name reads several ways (`mcp__a__b__c`: server `a` tool
 * `b__c`, or server `a__b` tool `c`): it is allowed only if every reading is. Its target is the
 * bridge's (the tool name) when NAME is `bridge` (bridge.name), else the name as given.
 */
export function refusedHookTool(
  refuses: ToolRefuses,
  target: string,
  bridge: string | undefined,
): EventInput | null {
  if (!target.startsWith(PREFIX)) return null;
  const rest = target.slice(PREFIX.length);
  const own = bridge === undefined ? null : `${bridge}__`;
  const shown = own !== null && rest.startsWith(own) ? rest.slice(own.length) : target;
  for (let i = rest.indexOf('__', 1); i > 0; i = rest.indexOf('__', i + 1)) {
    const tool = rest.slice(i + 2);
    if (tool === '') break;
    const refused = refusedTool(refuses, rest.slice(0, i), tool, shown);
    if (refused !== null) return refused;
  }
  return null;
}
