import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { plainRefusal, sendRefusal } from '../action/respond.js';
import type { ReverseProxy } from '../action/reverse-proxy.js';
import type { Config } from '../config/load.js';
import type { EventInput } from '../event/event.js';
import { globToRegExp } from '../guard/glob.js';
import { readBody } from './body.js';
import type { BridgeContext } from './bridge-calls.js';
import { callOutcome, judgeCall } from './bridge-calls.js';
import { presence } from './context.js';

interface Route {
  readonly method: string;
  readonly path: RegExp;
  readonly kind: string;
  readonly target: string;
}

export function compileRoutes(routes: Config['bridge']['routes']): Route[] {
  return routes.map((r) => ({ ...r, method: r.method.toUpperCase(), path: globToRegExp(r.path) }));
}

/**
 * A plain HTTP tool server: configured routes turn a request into an event (target from a
 * JSON body field, a query parameter or a path segment); a request no route matches is a
 * `tool` event, counted as `bridge.unmapped` says. Refusals are 403 with the verdict header.
 */
export async function handleHttpTool(
  ctx: BridgeContext,
  routes: readonly Route[],
  proxy: ReverseProxy,
  req: IncomingMessage,
  res: ServerResponse,
  who: { session: string; client: string },
): Promise<void> {
  const start = performance.now();
  const raw = req.url ?? '/';
  const url = new URL(raw, 'http://bridge');
  const method = req.method ?? 'GET';
  if (!raw.startsWith('/') || raw.startsWith('//') || url.pathname !== raw.split('?')[0]) {
    // The path judged must be the path the server gets: no dot segments, no `//`.
    const reason = `${method} ${raw.slice(0, 200)}: the path is not in normal form (no ., .. or //)`;
    return sendRefusal(
      res,
      ctx.pipeline.refusal({ source: 'bridge', ...who, method, target: raw }, 400, reason),
    );
  }
  const body = await readBody(req, ctx.config.bridge.maxBodyBytes);
  const route = routes.find((r) => r.method === method && r.path.test(url.pathname));
  let input: EventInput;
  if (route) {
    const target = targetOf(route.target, url, body);
    if (target === null) {
      const reason = `${method} ${url.pathname}: no string at ${route.target} for the ${route.kind} target`;
      const refusal = ctx.pipeline.refusal(
        { source: 'bridge', ...who, method, target: url.pathname },
        400,
        reason,
      );
      return sendRefusal(res, refusal);
    }
    input = { kind: route.kind, target };
  } else {
    input = { kind: 'tool', target: `${method} ${url.pathname}` };
  }
  const ruling = await judgeCall(ctx.pipeline, [input], {
    ...who,
    source: 'bridge',
    waiting: presence(req.socket),
    what: (e) => `${method} ${url.pathname} (${e.kind} ${e.target})`,
  });
  let transfer;
  if (ruling.gone) {
    transfer = {
      status: null,
      bytesUp: body.length,
      bytesDown: 0,
      error: 'client closed while held',
    };
  } else if (!ruling.allowed) {
    const refusal = ruling.refusal ?? plainRefusal(403, 'refused');
    sendRefusal(res, refusal);
    transfer = {
      status: refusal.status,
      bytesUp: body.length,
      bytesDown: 0,
      error: refusal.reason,
    };
  } else {
    const forwarded = await proxy.forward(req, res, body.length > 0 ? body : null);
    if (forwarded.failure)
      sendRefusal(res, plainRefusal(forwarded.failure.status, forwarded.failure.reason));
    transfer = forwarded.transfer;
  }
  callOutcome(ctx.pipeline, ruling.rids, who.session, transfer, start);
}

/** `$.a.b` (JSON body), `query:name`, `segment:N` (1-based path segment). */
function targetOf(spec: string, url: URL, body: Buffer): string | null {
  let value: unknown;
  if (spec.startsWith('$.')) {
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch {
      return null;
    }
    for (const key of spec.slice(2).split('.')) {
      value =
        typeof value === 'object' && value !== null
          ? (value as Record<string, unknown>)[key]
          : undefined;
    }
  } else if (spec.startsWith('query:')) {
    // A repeated parameter is ambiguous: servers differ on which value they take.
    const values = url.searchParams.getAll(spec.slice(6));
    value = values.length === 1 ? values[0] : null;
  } else {
    try {
      value = decodeURIComponent(url.pathname.split('/')[Number(spec.slice(8))] ?? '');
    } catch {
      return null;
    }
  }
  return typeof value === 'string' && value !== '' ? value : null;
}
