import type { Config } from '../config/load.js';
import type { EventInput } from '../event/event.js';
import type { PathResolver } from '../event/paths.js';
import { toolMap } from '../event/tool-map.js';
import { compileToolPolicy } from '../event/tool-policy.js';
import { HELD } from '../guard/decision.js';
import type { Decision, Guard } from '../guard/guard.js';
import { toolCallEvents } from '../ingress/ingest-tools.js';
import { applyRecord } from '../journal/rebuild.js';
import type { ResultRecord } from '../journal/records.js';
import { claudeCodeAction } from './claude-code.js';
import { replayEvent } from './replay-event.js';

/** One judged tool call: what it was, and the decision it got. */
export type HookVerdict = [
  { session: string; tool: string; kind: string; target: string },
  Decision,
];

/**
 * `trajgate replay --hook claude-code`: judges a file of Claude Code hook inputs as `check`
 * maps them and the gateway judges them. A PreToolUse is one call: its events (an MCP call of
 * the bridged server may make several, as ingest maps it) judged in order up to the first
 * refused one, the call's verdict that last decision. A PostToolUse or PostToolUseFailure is
 * applied as the gateway's result record is: linked by `tool_use_id` to its call (a failure
 * sets the marks trajectory rules wait for), or, naming no call judged here, a failure of the
 * session. A call of a paused session is held, as live, and refused: no operator decides
 * offline. Other hook events are passed over. Each call is named by its line number, its
 * session by `session_id`.
 */
export function hookReplay(
  config: Config,
  guard: Guard,
  paths: PathResolver,
  now: number,
): (text: string, line: number) => HookVerdict | null {
  const tools = toolMap(config.bridge.tools);
  const policy = compileToolPolicy(config);
  /** Calls by `tool_use_id` per session: the line (request id) of their first event. */
  const calls = new Map<string, number>();
  return (text, line) => {
    const action = claudeCodeAction(text);
    if (action.type === 'none') return null;
    const { session_id: id, tool_name: tool } = JSON.parse(text) as Record<string, unknown>;
    const session = typeof id === 'string' && id !== '' ? id : 'replay';
    const key = (call: string) => `${session}\0${call}`;
    if (action.type === 'result') {
      const { result } = action;
      const rid = result.call === undefined ? undefined : calls.get(key(result.call));
      const record: ResultRecord = {
        type: 'result',
        ts: new Date(now).toISOString(),
        seq: line,
        session,
        ...result,
        rid: rid ?? null,
        ...(rid === undefined ? { unlinked: 'no call judged here has its tool_use_id' } : {}),
      };
      applyRecord(guard, record);
      return null;
    }
    const { arguments: args, ...input } = action.event;
    const workspace = guard.policy.workspaceFor(session);
    const refuses = (server: string, name: string) => policy.refuses(session, server, name);
    const events: EventInput[] =
      input.kind === 'tool'
        ? toolCallEvents(input, args ?? {}, { name: config.bridge.name, tools, refuses }, workspace)
        : [input];
    if (input.call !== undefined) calls.set(key(input.call), line);
    const named = { session, tool: tool as string, kind: input.kind, target: input.target };
    // Live, a paused session's call is held until an operator decides (offline none does),
    // then refused naming the boundary that paused it.
    const state = guard.session(session);
    if (state?.pausedAt != null) return [named, { ...HELD, boundary: state.pausedBy ?? null }];
    let decided: [EventInput, Decision] | undefined;
    for (const event of events) {
      const at = { session, ts: now, seq: line, rid: line };
      decided = [event, replayEvent(event, at, guard, paths).decision];
      if (refused(decided[1], config)) break;
    }
    const [event, decision] = decided as [EventInput, Decision];
    return [{ ...named, kind: event.kind, target: event.target }, decision];
  };
}

/** As the live gateway answers: PAUSE, and REVIEW unless `policy.review: pass`. */
const refused = (d: Decision, config: Config): boolean =>
  d.verdict === 'PAUSE' || (d.verdict === 'REVIEW' && config.policy.review !== 'pass');
