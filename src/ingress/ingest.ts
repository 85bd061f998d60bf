import type { IncomingMessage, ServerResponse } from 'node:http';
import { isTrajgateError, TrajgateError } from '../errors.js';
import type { EventInput } from '../event/event.js';
import { networkTargetProblem } from '../event/network-readings.js';
import { describeValue, validateEventInput } from '../event/validate.js';
import { sendError, sendJson } from '../http/json.js';
import { readJson } from '../http/body.js';
import type { BridgeContext, BridgeRequest } from './bridge-calls.js';
import { callOutcome, judgeCall } from './bridge-calls.js';
import { ingestAnswer } from './ingest-answer.js';
import { presence } from './context.js';
import type { Who } from './identity.js';
import type { BridgedServer } from './ingest-tools.js';
import { toolCallEvents } from './ingest-tools.js';
import type { ProxyContext } from './context.js';
import { sentinelIn } from './sentinel-watch.js';
import { carrying } from './tool-exfiltration.js';

const INGEST_LIMIT = 64 * 1024;

/**
 * `POST /events {"kind","target"}`: a runner (a shell hook, a Claude Code PreToolUse hook) puts
 * its own actions into the agent's trajectory and gets the decision back as JSON. A paused
 * session holds the answer like any request. With `call` (the runner's id of the call, unique
 * in the session) its result (`POST /events/result`) is linked to it by that id. A `tool` event
 * of the bridged MCP server (with its `arguments`) is judged as the bridge judges the call: all
 * its events, as one call.
 */
export async function handleIngest(
  ctx: BridgeContext,
  { req, res, who, start }: BridgeRequest,
): Promise<void> {
  const events = await ingestBody(ctx, req, res, who, (body) => {
    const workspace = ctx.pipeline.workspaceFor(who.session);
    const bridged = {
      name: ctx.config.bridge.name,
      tools: ctx.tools,
      refuses: (server: string, tool: string) =>
        ctx.toolPolicy.current.refuses(who.session, server, tool),
    };
    const read = parseEvents(body, ctx.config.kinds, bridged, workspace, ctx.credentials.current);
    const call = read[0]?.call;
    if (call !== undefined && !ctx.calls.open(who.session, call)) {
      throw new TrajgateError(
        'E_EVENT_INVALID',
        `"call" ${JSON.stringify(call)} was already asked about in this session: a result could not say which call it reports`,
      );
    }
    return read;
  });
  if (events === null) return;
  const input = events[0] as EventInput;
  const ruling = await judgeCall(ctx.pipeline, events, {
    ...who,
    source: 'ingest',
    waiting: presence(req.socket),
    what: (e) => `${e.kind} ${e.target}`,
  }).finally(() => {
    if (input.call !== undefined) ctx.calls.close(who.session, input.call);
  });
  // Judged (its record written) whatever the verdict: its result, if any, links to it.
  const rid = ruling.rids[0];
  if (input.call !== undefined && rid !== undefined) ctx.calls.judged(who.session, input.call, rid);
  if (ruling.kind === 'gone')
    return callOutcome(
      ctx.pipeline,
      ruling.rids,
      who.session,
      { status: null, bytesUp: 0, bytesDown: 0, error: 'client closed while held' },
      start,
    );
  const answer = ingestAnswer(ruling);
  const outage = answer instanceof TrajgateError;
  if (outage) sendError(res, answer);
  else sendJson(res, 200, answer);
  callOutcome(
    ctx.pipeline,
    ruling.rids,
    who.session,
    { status: outage ? 503 : 200, bytesUp: 0, bytesDown: 0 },
    start,
  );
}

/**
 * Reads and parses an ingest body (`/events`, `/events/result`); a malformed or oversized one
 * is journaled as a refusal and answered 400 or 413 here, and null returned.
 */
export async function ingestBody<T>(
  ctx: BridgeContext,
  req: IncomingMessage,
  res: ServerResponse,
  who: Who,
  parse: (body: Buffer) => T,
): Promise<T | null> {
  try {
    // The JSON as the bridge reads it (UTF-8, decoded, no duplicate keys), in its serialisation.
    return parse(Buffer.from(JSON.stringify(await readJson(req, INGEST_LIMIT))));
  } catch (err) {
    if (!isTrajgateError(err)) throw err;
    const status = err.status ?? 400;
    ctx.pipeline.refusal(
      { source: 'ingest', client: who.client, session: who.session },
      status,
      err.message,
    );
    sendError(res, err, status);
    return null;
  }
}

/**
 * An ingest body as the events it makes: one, or for a `tool` event with `arguments` (a runner's
 * MCP call) those the bridge would make of the call (ingest-tools.ts).
 */
function parseEvents(
  body: Buffer,
  kinds: ReadonlySet<string>,
  bridge: BridgedServer,
  workspace: string,
  credentials: Pick<ProxyContext['credentials'], 'scanner'>,
): readonly EventInput[] {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new TrajgateError(
      'E_EVENT_INVALID',
      `body is not valid JSON (${(err as Error).message})`,
    );
  }
  const input = validateEventInput(value, kinds);
  // The runner's own client fetches it: a URL it may read as another host is refused here.
  const problem = input.kind === 'network' ? networkTargetProblem(input.target) : null;
  if (problem !== null) throw new TrajgateError('E_EVENT_INVALID', problem);
  const args = (value as { arguments?: unknown }).arguments;
  if (args !== undefined && input.kind !== 'tool')
    throw new TrajgateError(
      'E_EVENT_INVALID',
      `"arguments" (a tool call's) are taken with kind "tool" only, got kind ${JSON.stringify(input.kind)}`,
    );
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args)))
    throw new TrajgateError(
      'E_EVENT_INVALID',
      `"arguments" must be an object, got ${describeValue(args)}`,
    );
  // A runner's action carrying a sentinel (`curl -H "Authorization: Bearer tgs_…"`) leaks it.
  const out =
    sentinelIn(credentials, input.command ?? '', 'command line') ??
    sentinelIn(credentials, input.target, 'target') ??
    sentinelIn(credentials, JSON.stringify(args ?? {}), 'tool input');
  if (input.kind !== 'tool') return carrying([input], out, input.target);
  // Without arguments too: a bridged tool's call cannot skip its mapping by leaving them out.
  const events = toolCallEvents(input, (args ?? {}) as Record<string, unknown>, bridge, workspace);
  return carrying(events, out, input.target);
}
