import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { Logger } from 'pino';
import { AdminQueue, RETRY_AFTER } from './admin-queue.js';
import type { AdminKeys } from './admin-token.js';
import type { Api } from './api.js';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { readJsonBody, sendError, sendJson } from '../http/json.js';
import type { JournalHealth } from '../journal/health.js';
import type {
  CredentialAnswer,
  CredentialView,
  HealthView,
  StoreView,
  ToolPinsView,
} from '../wire.js';
import type { Metrics } from './metrics.js';
import { reviewPage } from './page.js';

type Handler = (
  req: IncomingMessage,
  by: string,
  id: string | null,
  query: URLSearchParams,
) => unknown;

interface Route {
  readonly method: string;
  readonly pattern: RegExp;
  readonly handler: Handler;
  readonly status?: number;
  /** Reads the journal or every session: waits its turn in the admin queue (429 past it). */
  readonly queued?: true;
}

/**
 * The admin listener: the review page at /, JSON under /api/, Prometheus text at /metrics.
 * Every call but the page's static files, /healthz and decision links (/decide/TOKEN) carries
 * `Authorization: Bearer TOKEN`; tokens are compared as SHA-256 digests in constant time and
 * the matching token's name is recorded as who acted (`by`).
 */
export function createAdminServer(deps: {
  api: Api;
  metrics: Metrics;
  health: JournalHealth;
  /** The state store's health; operator actions need it up. */
  store: () => StoreView;
  /**
   * Runs an operator's action with the state store: the session's state read first, the
   * action's records shared with the other gateways before it is answered.
   */
  act: <T>(session: string | null, act: () => Promise<T>) => Promise<T>;
  keys: AdminKeys;
  /** Credentials: listed, revoked and restored (gateway/credential-desk.ts). */
  credentials: {
    list(): CredentialView[];
    set(name: string, revoked: boolean, by: string): CredentialAnswer;
  };
  /** Pinned tool definitions: listed, one server's, a pending list pinned (gateway/tool-pins.ts). */
  tools: {
    list(): ToolPinsView[];
    view(server: string): ToolPinsView;
    approve(server: string, digest: unknown, by: string): unknown;
  };
  /** Re-reads the config file (POST /api/reload). */
  reload: (by: string) => Promise<unknown>;
  /** `/decide/TOKEN`: decision links, whose signed token stands in for the admin token. */
  decide: (req: IncomingMessage, res: ServerResponse, token: string) => Promise<void>;
  log: Logger;
}): Server {
  const { api, metrics, log } = deps;
  const session = (tail: string) => new RegExp(`^/api/sessions/([^/]+)${tail}$`);
  const routes: Route[] = [
    { method: 'GET', pattern: /^\/api\/health$/, handler: () => healthView(deps) },
    {
      method: 'GET',
      pattern: /^\/api\/sessions$/,
      queued: true,
      handler: (_r, _b, _id, q) => api.views.list(q),
    },
    {
      method: 'GET',
      pattern: session(''),
      queued: true,
      handler: (_req, _by, id) => api.views.detail(id as string),
    },
    {
      method: 'GET',
      pattern: session('/events'),
      queued: true,
      handler: (_r, _b, id, q) => api.events(id as string, q),
    },
    {
      method: 'GET',
      pattern: session('/captures/[^/]+'),
      handler: (req, _b, id) => ({
        capture: api.capture(id as string, decodeURIComponent(lastSegment(req.url))),
      }),
    },
    {
      method: 'POST',
      pattern: session('/approve'),
      status: 201,
      handler: async (req, by, id) => ({ approval: api.approve(id, await readJsonBody(req), by) }),
    },
    {
      method: 'POST',
      pattern: session('/resume'),
      handler: async (req, by, id) => ({
        resumed: true,
        ...(await api.resume(id as string, await readJsonBody(req), by)),
      }),
    },
    {
      method: 'POST',
      pattern: session('/topup'),
      handler: async (req, by, id) => api.topUp(id as string, await readJsonBody(req), by),
    },
    {
      method: 'POST',
      pattern: session('/deny'),
      handler: async (req, by, id) => {
        await readJsonBody(req);
        return { denied: true, ...api.deny(id as string, by) };
      },
    },
    {
      method: 'POST',
      pattern: /^\/api\/reload$/,
      handler: async (req, by) => {
        await readJsonBody(req);
        return deps.reload(by);
      },
    },
    {
      method: 'POST',
      // `/block`: the old name, until the next minor version.
      pattern: session('/(?:denies|block)'),
      status: 201,
      handler: async (req, by, id) => api.addDeny(id, await readJsonBody(req), by),
    },
    {
      method: 'GET',
      pattern: /^\/api\/events\/([^/]+)$/,
      queued: true,
      handler: (_req, _by, seq) => api.rules.event(seq as string),
    },
    {
      method: 'DELETE',
      pattern: /^\/api\/approvals\/([^/]+)$/,
      handler: (_req, by, id) => api.rules.revoke('approval', id as string, by),
    },
    { method: 'GET', pattern: /^\/api\/denies$/, handler: () => ({ denies: api.rules.denies() }) },
    {
      method: 'POST',
      pattern: /^\/api\/denies$/,
      status: 201,
      handler: async (req, by) => api.addDeny(null, await readJsonBody(req), by),
    },
    {
      method: 'DELETE',
      pattern: /^\/api\/denies\/([^/]+)$/,
      handler: (_req, by, id) => api.rules.revoke('deny', id as string, by),
    },
    {
      method: 'GET',
      pattern: /^\/api\/credentials$/,
      handler: () => ({ credentials: deps.credentials.list() }),
    },
    {
      method: 'POST',
      pattern: /^\/api\/credentials\/([^/]+)\/(?:revoke|restore)$/,
      handler: async (req, by, name) => {
        await readJsonBody(req);
        const revoke = lastSegment(req.url) === 'revoke';
        return deps.credentials.set(name as string, revoke, by);
      },
    },
    { method: 'GET', pattern: /^\/api\/tools$/, handler: () => deps.tools.list() },
    {
      method: 'GET',
      pattern: /^\/api\/tools\/([^/]+)$/,
      handler: (_req, _by, server) => deps.tools.view(server as string),
    },
    {
      method: 'POST',
      pattern: /^\/api\/tools\/([^/]+)\/approve$/,
      handler: async (req, by, server) =>
        deps.tools.approve(server as string, (await readJsonBody(req)).digest, by),
    },
    {
      method: 'GET',
      pattern: /^\/api\/approvals$/,
      handler: () => ({ approvals: api.approvals() }),
    },
    {
      method: 'POST',
      pattern: /^\/api\/approvals$/,
      status: 201,
      handler: async (req, by) => ({ approval: api.approve(null, await readJsonBody(req), by) }),
    },
  ];

  const page = reviewPage();
  const queue = new AdminQueue();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://admin');
    // The review page's static files hold no data: served before the token check.
    if (page(req, res, url.pathname)) return;
    if (url.pathname === '/healthz' && (req.method === 'GET' || req.method === 'HEAD'))
      return live(res);
    if (url.pathname.startsWith('/decide/'))
      return deps.decide(req, res, url.pathname.slice('/decide/'.length));
    const by = deps.keys.who(req.headers.authorization);
    if (by === null) {
      res.setHeader('www-authenticate', 'Bearer realm="trajgate admin"');
      throw new TrajgateError(
        'E_UNAUTHORIZED',
        'missing or wrong admin token (Authorization: Bearer TOKEN)',
      );
    }
    if (url.pathname === '/metrics' && req.method === 'GET') {
      const text = await metrics.text();
      res.writeHead(200, { 'content-type': metrics.contentType });
      res.end(text);
      return;
    }
    let allowed = false;
    for (const route of routes) {
      const m = route.pattern.exec(url.pathname);
      if (!m) continue;
      allowed = true;
      if (route.method !== req.method) continue;
      const id = m[1] === undefined ? null : decodeURIComponent(m[1]);
      // An action the other gateways would not learn of is not taken.
      const store = deps.store();
      if (req.method !== 'GET' && !store.up) {
        throw new TrajgateError('E_STORE_DOWN', `the state store does not answer: ${store.error}`);
      }
      const session = url.pathname.startsWith('/api/sessions/') ? id : null;
      const handle = () => route.handler(req, by, id, url.searchParams);
      const answer = async () =>
        sendJson(
          res,
          route.status ?? 200,
          await (req.method === 'GET' ? handle() : deps.act(session, async () => handle())),
        );
      // Reads wait their turn (sending included); a caller gone meanwhile costs nothing more.
      if (route.queued) await queue.run(() => (req.socket.destroyed ? undefined : answer()));
      else await answer();
      return;
    }
    if (allowed)
      throw new TrajgateError('E_METHOD', `${req.method} is not allowed on ${url.pathname}`);
    throw new TrajgateError('E_NOT_FOUND', `no route ${url.pathname}`);
  };

  return createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      // A code the API answers with goes to the caller; anything else is ours to log.
      if (isTrajgateError(err) && err.status !== null) {
        if (err.code === 'E_BUSY') res.setHeader('retry-after', String(RETRY_AFTER));
        return sendError(res, err);
      }
      if (err instanceof URIError)
        return sendError(
          res,
          new TrajgateError('E_BAD_FIELD', 'session id is not valid percent-encoding'),
        );
      log.error({ err }, 'admin: request failed');
      sendError(res, new TrajgateError('E_INTERNAL', 'internal error; see the gateway log'));
    });
  });
}

/**
 * Liveness for Docker's HEALTHCHECK and orchestrators, without the token: the admin listener
 * starts after the proxy and the bridge, so an answer means all three are up. It says nothing
 * else (readiness, with the journal's and the store's state, is the authenticated /api/health):
 * a failing journal refuses agents by itself, and a restart would not mend a full disk.
 */
function live(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end('ok\n');
}

/** The last path segment of a request target (a route's second id). */
function lastSegment(target: string | undefined): string {
  return new URL(target ?? '/', 'http://admin').pathname.split('/').at(-1) ?? '';
}

function healthView(deps: { health: JournalHealth; store: () => StoreView }): HealthView {
  const journal = deps.health.view();
  const store = deps.store();
  return { ...journal, status: store.up ? journal.status : 'degraded', store };
}
