import type { ArmedCredential } from '../config/credential-values.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Refusal } from '../action/refusal.js';
import type { ReverseProxy } from '../action/reverse-proxy.js';
import type { Transfer } from '../action/transfer.js';
import type { Shape, Slice } from '../config/parts.js';
import type { EventInput, Source } from '../event/event.js';
import type { ToolMap } from '../event/tool-map.js';
import type { ToolPolicy } from '../event/tool-policy.js';
import type { Decision } from '../guard/guard.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import type { TunnelRuling } from '../pipeline/ruling.js';
import type { Presence } from '../action/hold.js';
import type { CredentialsInForce } from '../event/credential-set.js';
import type { Drain } from './drain.js';
import type { HookCalls } from './hook-calls.js';
import type { Identity } from './identity.js';
import type { McpSessions } from './mcp-sessions.js';
import type { SessionOrder } from './session-order.js';
import type { ToolListObserver } from './tool-lists.js';
import type { Who } from './identity.js';

/** What the bridge's handlers read of the config (its routes and listener once, the rest at each call). */
export const BRIDGE = {
  bridge: ['protocol', 'routes', 'name', 'maxBodyBytes'],
  limits: ['headerTimeout'],
  kinds: true,
} as const satisfies Shape;

/** What the bridge's handlers share. */
export interface BridgeContext {
  readonly config: Slice<typeof BRIDGE>;
  readonly pipeline: Pipeline;
  readonly identity: Identity;
  /** null when no `bridge.upstream` is configured (only ingest is served). */
  readonly proxy: ReverseProxy | null;
  readonly tools: ToolMap;
  readonly log: Logger;
  /** One changing tool call at a time per session. */
  readonly order: SessionOrder;
  /** Whose each MCP session is (Mcp-Session-Id). */
  readonly sessions: McpSessions;
  /** Counts running handlers (a stop waits for their outcomes). */
  readonly drain: Drain;
  /** Runners' calls by id, for their results to be linked to. */
  readonly calls: HookCalls;
  /** The credentials whose sentinels no call may carry (`.current` read per call). */
  readonly credentials: Pick<CredentialsInForce<ArmedCredential>, 'current'>;
  /** Which tools each agent may see and call (`.current`: the running config's, per call). */
  readonly toolPolicy: { readonly current: ToolPolicy };
  /** Told every tools/list answer as the server sent it, before the agent is given it. */
  readonly toolLists: ToolListObserver;
}

/** A bridge request once its agent is known, as the listener hands it to a handler. */
export interface BridgeRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly who: Who;
  /** performance.now() when it arrived. */
  readonly start: number;
}

/**
 * The ruling on every event a call makes, as the bridge's and ingest's renderers take it:
 * forwarded only if all were allowed (`decision`: the last one's), else the first refusal
 * (`decision`: the one behind a policy refusal). `rids`: the requests judged (one per event),
 * each owed one outcome.
 */
export type CallRuling =
  | { readonly kind: 'forward'; readonly rids: readonly number[]; readonly decision?: Decision }
  | {
      readonly kind: 'refuse';
      readonly rids: readonly number[];
      readonly refusal: Refusal;
      readonly decision?: Decision;
    }
  | { readonly kind: 'gone'; readonly rids: readonly number[] };

/**
 * Judges a call's events in order and stops at the first refused one: a `move_file` from
 * inside to outside the workspace is refused as a whole, and both crossings are recorded. A
 * paused session holds the call on its first event, like any request.
 */
export async function judgeCall(
  pipeline: Pipeline,
  events: readonly EventInput[],
  who: {
    session: string;
    client: string;
    source: Source;
    waiting: Presence;
    what: (input: EventInput) => string;
  },
): Promise<CallRuling> {
  const rids: number[] = [];
  let decision: Decision | undefined;
  for (const input of events) {
    const ruling = await pipeline.judge({
      ...who,
      input,
      what: who.what(input),
      connect: false,
    });
    if (ruling.rid !== null) rids.push(ruling.rid);
    if (ruling.kind === 'gone') return { kind: 'gone', rids };
    if (ruling.kind === 'refuse') {
      const { refusal, decision } = ruling;
      return { kind: 'refuse', rids, refusal, ...(decision ? { decision } : {}) };
    }
    decision = ruling.decision;
  }
  return { kind: 'forward', rids, ...(decision ? { decision } : {}) };
}

/**
 * A message that makes no event (MCP's own protocol, a call that names no path, a server
 * stream): while its session is paused it is held like any request (journaled as held, by
 * `what`), and refused when the hold ends without a resume; else it goes at once, unjournaled.
 */
export function admitMessage(
  pipeline: Pipeline,
  who: { session: string; client: string; waiting: Presence; what: string },
): Promise<TunnelRuling> {
  const input = { kind: 'tool', target: who.what };
  return pipeline.admitTunnel({ ...who, source: 'bridge', input, connect: false });
}

/** One outcome per judged event of the call. */
export function callOutcome(
  pipeline: Pipeline,
  rids: readonly number[],
  session: string,
  transfer: Transfer,
  start: number,
): void {
  for (const rid of rids) pipeline.outcome(rid, session, transfer, performance.now() - start);
}
