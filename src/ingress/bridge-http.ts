import type { IncomingMessage } from 'node:http';
import { plainRefusal, refusalLine } from '../action/refusal.js';
import { sendRefusal } from '../action/respond.js';
import type { AnswerWatch, ReverseProxy } from '../action/reverse-proxy.js';
import type { EventInput } from '../event/event.js';
import { isTrajgateError } from '../errors.js';
import type { ToolTarget } from '../event/tool-map.js';
import { readJson } from '../http/body.js';
import type { BridgeContext, BridgeRequest } from './bridge-calls.js';
import { callOutcome, judgeCall } from './bridge-calls.js';
import type { ProxyContext } from './context.js';
import { presence } from './context.js';
import { methodOverrideProblem } from './method-override.js';
import { judgedPaths } from './tool-paths.js';
import type { Route } from './route-path.js';
import { matchRoute } from './route-path.js';
import { commandOf, targetOf } from './route-target.js';
import { sentinelIn } from './sentinel-watch.js';
import { argumentsExfiltration, carrying } from './tool-exfiltration.js';

/**
 * A plain HTTP tool server: configured routes turn a request into an event (target from a
 * JSON body field, a query parameter or a path segment); a request no route matches is a
 * `tool` event, counted as `bridge.unmapped` says. Refusals are 403 with the verdict header.
 */
export async function handleHttpTool(
  ctx: BridgeContext,
  routes: readonly Route[],
  proxy: ReverseProxy,
  request: BridgeRequest,
): Promise<void> {
  const { req, res, who } = request;
  const raw = req.url ?? '/';
  const method = req.method ?? 'GET';
  const unmatched = (reason: string) =>
    sendRefusal(
      res,
      ctx.pipeline.refusal({ source: 'bridge', ...who, method, target: raw }, 400, reason),
    );
  // A route is chosen by method: a tool server honouring an override would run another one.
  // Everything after `?` is scanned, a fragment too: more than the server reads, never less.
  const query = raw.indexOf('?');
  const override = methodOverrideProblem(req.rawHeaders, query < 0 ? '' : raw.slice(query));
  if (override !== null) return unmatched(override);
  const match = matchRoute(raw, method, routes);
  if (!match.ok) return unmatched(`${method} ${match.reason}`);
  // The server gets the path judged: normalised, the query as sent but for a path target's
  // pair, rewritten once the path is resolved (route-target.ts).
  req.url = match.url;
  const path = match.path;
  const value = await readJson(req, ctx.config.bridge.maxBodyBytes, { empty: true });
  const route = match.route;
  const refuse = (why: string) =>
    sendRefusal(
      res,
      ctx.pipeline.refusal(
        { source: 'bridge', ...who, method, target: path },
        400,
        `${method} ${path}: ${why}`,
      ),
    );
  const forward = (url: string) => void (req.url = url);
  const asked = { match, method, routes, body: value, forward };
  const found = route ? targetOf(route, asked) : asSent('tool', `${method} ${path}`);
  if (found === null || 'problem' in found)
    return refuse(found?.problem ?? `no string at ${route?.target} for the ${route?.kind} target`);
  const command = route ? commandOf(route, asked) : null;
  if (command !== null && typeof command === 'object') return refuse(command.problem);
  const target = command === null ? found : { ...found, command };
  await ctx.order.run(who.session, target.kind !== 'read', async () => {
    // Resolved in the call's turn: an earlier call of the session may have moved things.
    let input: EventInput;
    try {
      [input] = judgedPaths([target], ctx.pipeline.workspaceFor(who.session)) as [EventInput];
    } catch (err) {
      if (!isTrajgateError(err) || err.code !== 'E_PATH_REFUSED') throw err;
      return refuse(err.message);
    }
    // Serialised once the path judged is written into it.
    const body = value === undefined ? null : Buffer.from(JSON.stringify(value));
    const set = ctx.credentials.current;
    const out =
      argumentsExfiltration(set, value, 'body field') ??
      sentinelIn(set, match.url, 'URL') ??
      headerExfiltration(set, req.rawHeaders);
    [input] = carrying([input], out, `${method} ${path}`) as [EventInput];
    await call(ctx, proxy, request, { input, body, method, path });
  });
}

async function call(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  { req, res, who, start }: BridgeRequest,
  c: { input: EventInput; body: Buffer | null; method: string; path: string },
): Promise<void> {
  const { input, body, method, path } = c;
  const bytesUp = body?.length ?? 0;
  const ruling = await judgeCall(ctx.pipeline, [input], {
    ...who,
    source: 'bridge',
    waiting: presence(req.socket),
    what: (e) => `${method} ${path} (${e.kind} ${e.target})`,
  });
  let transfer;
  if (ruling.kind === 'gone') {
    transfer = {
      status: null,
      bytesUp,
      bytesDown: 0,
      error: 'client closed while held',
    };
  } else if (ruling.kind === 'refuse') {
    sendRefusal(res, ruling.refusal);
    transfer = {
      status: ruling.refusal.status,
      bytesUp,
      bytesDown: 0,
      error: refusalLine(ruling.refusal),
    };
  } else {
    const what = `${req.method ?? 'GET'} ${req.url ?? '/'}`;
    const flow = ctx.pipeline.sessionFlow('tool', who.session, what, ruling.rids[0] ?? null);
    try {
      const forwarded = await proxy.forward(req, res, body, statusWatch, flow);
      if (forwarded.failure)
        sendRefusal(res, plainRefusal(forwarded.failure.status, forwarded.failure.reason));
      transfer = forwarded.transfer;
    } finally {
      flow.end();
    }
  }
  callOutcome(ctx.pipeline, ruling.rids, who.session, transfer, start);
}

/** A sentinel in a header of a request to the tool server. */
function headerExfiltration(set: ProxyContext['credentials'], raw: readonly string[]) {
  for (let i = 0; i < raw.length; i += 2) {
    const found = sentinelIn(set, raw[i + 1]!, `header ${raw[i]!}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A tool server's answer is a failure when its status is (the body is its own business). */
function statusWatch(answer: IncomingMessage): AnswerWatch {
  const failed = (answer.statusCode ?? 0) >= 400;
  return { chunk: () => undefined, end: () => failed };
}

/** A target in the URL: judged (and its spelling checked) but forwarded as sent. */
function asSent(kind: string, target: string): ToolTarget {
  return { kind, target, set: () => undefined };
}
