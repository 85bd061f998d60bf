import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { built, live, part, pick } from '../config/parts.js';
import { createAdminServer } from '../review/admin.js';
import { ADMIN, AdminKeys, adminTokens } from '../review/admin-token.js';
import { API, Api } from '../review/api.js';
import { decideHandler } from '../review/decide-page.js';
import { DecisionLinks } from '../review/decision-links.js';
import { linkKey, LINK_KEY } from '../review/link-key.js';
import { Webhook, WEBHOOK } from '../review/webhook.js';
import type { ConfigParts } from './config-parts.js';
import { CredentialDesk } from './credential-desk.js';
import type { Listeners } from './listeners.js';
import type { ReloadResult } from './reload.js';
import type { Opening, Trajectory } from './trajectory.js';

/** What the review side reads each time it signs or checks a link. */
const LINK_TTL = { notify: ['linkTtl'] } as const;

/** Decision links and their key, which also tags MCP session ids with their agent. */
export interface Links {
  readonly links: DecisionLinks;
  readonly key: () => Buffer;
}

/**
 * Decision links (their key read at each use, so a reload's `notify.linkKey` applies) and the
 * webhook that sends them.
 */
export function openLinks(
  config: Config,
  t: Trajectory,
  deps: Opening & { readonly listeners: Listeners },
): Links {
  const { log, parts } = deps;
  const keyed = live('link key', LINK_KEY, config);
  const ttl = live('decision links', LINK_TTL, config);
  const key = linkKey(keyed.value);
  const { guard, review, sessions, denials, metrics } = t;
  const links = new DecisionLinks({
    key,
    guard,
    review,
    sessions,
    denials,
    linkTtl: () => ttl.value.notify.linkTtl,
    log,
  });
  const webhook = new Webhook(pick(config, WEBHOOK), {
    review,
    links,
    metrics,
    log,
    admin: () => deps.listeners.address('admin'),
  });
  deps.teardown.push('webhook', () => webhook.close());
  parts.add(keyed.part, ttl.part, webhook.part());
  return { links, key };
}

/** The admin listener's handlers: the API, the review page, /metrics, decision links. */
export function openAdmin(
  config: Config,
  t: Trajectory,
  deps: {
    readonly log: Logger;
    readonly parts: ConfigParts;
    readonly links: DecisionLinks;
    reload(by: string): Promise<ReloadResult>;
  },
): { readonly server: Server; readonly tokenFile: string | null } {
  const { tokens, file } = adminTokens(pick(config, ADMIN));
  const keys = new AdminKeys(tokens);
  const api = live('admin API', API, config);
  deps.parts.add(
    part({
      name: 'admin tokens',
      reads: ADMIN,
      configure: (next) =>
        built(
          // A token generated beside the journal is read (or made) now.
          () => adminTokens(next).tokens,
          (tokens) => keys.replace(tokens),
        ),
    }),
    api.part,
  );
  const { store } = t;
  const adminApi = new Api(api.value, t.guard, t.sessions, t.review, t.index);
  // The list's sections count paused sessions as they change: a scrape scans none.
  t.metrics.gauges({ paused: () => adminApi.views.count('paused') });
  const server = createAdminServer({
    api: adminApi,
    metrics: t.metrics,
    health: t.health,
    store: () => store.view(),
    act: (session, act) => store.action(session, act),
    keys,
    credentials: new CredentialDesk(t.journal, {
      config: t.deciding,
      guard: t.guard,
      egress: t.egress,
      flows: t.flows,
      credentials: t.credentials,
    }),
    tools: t.toolPins,
    reload: deps.reload,
    decide: decideHandler(deps.links),
    log: deps.log,
  });
  return { server, tokenFile: file };
}
