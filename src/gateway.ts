import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Lookup } from './action/egress.js';
import { authority } from './action/forward.js';
import { ReverseProxy } from './action/reverse-proxy.js';
import { upstreamTrust } from './action/trust.js';
import type { HostPort } from './config/formats.js';
import type { Config } from './config/load.js';
import { refuseDataInWorkspaces } from './config/own-files.js';
import type { RunningConfig } from './config/reload-plan.js';
import { errnoCode, isTrajgateError, TrajgateError } from './errors.js';
import { toolMap } from './event/tool-map.js';
import type { Guard } from './guard/guard.js';
import { createBridgeServer } from './ingress/bridge.js';
import type { Cut } from './ingress/drain.js';
import { Identity } from './ingress/identity.js';
import { McpSessions } from './ingress/mcp-sessions.js';
import { createProxyServer } from './ingress/proxy.js';
import { ProxyParts } from './ingress/proxy-parts.js';
import { SessionOrder } from './ingress/session-order.js';
import type { JournalHealth } from './journal/health.js';
import type { JournalWriter } from './journal/writer.js';
import { systemMessage } from './os-error.js';
import { Pipeline } from './pipeline/pipeline.js';
import type { ReloadResult } from './reload.js';
import { Reloader, reloadRefusal } from './reload.js';
import { createAdminServer } from './review/admin.js';
import { AdminKeys, adminTokens } from './review/admin-token.js';
import { Api } from './review/api.js';
import { DecisionLinks } from './review/decision-links.js';
import { decideHandler } from './review/decide-page.js';
import { HandshakeLog } from './review/handshakes.js';
import { linkKey } from './review/link-key.js';
import { notifyOnDecisions } from './review/notices.js';
import type { Review } from './review/review.js';
import type { Sessions } from './review/sessions.js';
import type { StoreView } from './wire.js';
import { Listeners } from './gateway/listeners.js';
import { Teardown } from './gateway/teardown.js';
import { openTrajectory } from './gateway/trajectory.js';

export interface RunningGateway {
  readonly config: Config;
  readonly guard: Guard;
  readonly journal: JournalWriter;
  readonly sessions: Sessions;
  readonly review: Review;
  readonly pipeline: Pipeline;
  /** Where the proxy, bridge and admin listeners are (real ports when the config said 0). */
  readonly proxy: HostPort;
  readonly bridge: HostPort;
  readonly admin: HostPort;
  /** The generated admin token's file, when the config names none. */
  readonly adminTokenFile: string | null;
  /** Records read back from the journal at start. */
  readonly restored: number;
  /** Whether the journal can be written (GET /api/health). */
  readonly health: JournalHealth;
  /** Where the trajectory is kept and whether it answers; this gateway's replica name. */
  readonly store: { view(): StoreView; readonly replica: string | null };
  /** Re-reads the config file and applies it (SIGHUP, POST /api/reload); see Reloader. */
  reload(by: string): Promise<ReloadResult>;
  /**
   * Stops accepting and drains (see Drain): in-flight requests finish up to
   * `limits.drainTimeout`, then what remains is cut; then closes every part, last opened first.
   */
  stop(): Promise<StopSummary>;
}

export interface StopSummary {
  /** From stop() to the journal closed. */
  readonly ms: number;
  /** What still ran at `limits.drainTimeout` and was cut; null when everything drained. */
  readonly cut: Cut | null;
}

export interface GatewayOptions {
  readonly log: Logger;
  /** Name resolution for egress (tests resolve names to loopback without a resolver). */
  readonly lookup?: Lookup;
}

/**
 * Builds the data path from a config, rebuilds state from the journal, and starts listening.
 * Parts open in the order they depend on each other, each one's close pushed on a Teardown: a
 * failure anywhere closes what was opened, last first (so no socket keeps the process alive),
 * and throws a TrajgateError; stop closes the same list.
 */
export async function startGateway(
  initial: Config,
  options: GatewayOptions,
): Promise<RunningGateway> {
  refuseDataInWorkspaces(initial);
  const teardown = new Teardown(options.log);
  try {
    return await open(initial, options, teardown);
  } catch (err) {
    await teardown.close();
    throw startFailure(err, options.log);
  }
}

async function open(
  initial: Config,
  { log, lookup }: GatewayOptions,
  teardown: Teardown,
): Promise<RunningGateway> {
  // One object every part reads; a reload swaps its sections (see Reloader).
  const config: RunningConfig = { ...initial };
  const trajectory = await openTrajectory(config, log, lookup, teardown);
  const { metrics, store, guard, review, held, journal, flows, egress, sessions } = trajectory;
  const listeners = new Listeners({
    log,
    drainTimeout: () => config.limits.drainTimeout,
    releaseHeld: () => held.releaseAll(),
    closeTunnels: (reason) => flows.closeAll(reason),
  });
  // The link key also tags MCP session ids with their agent (ingress/mcp-sessions.ts).
  const key = linkKey(config);
  const links = new DecisionLinks({
    key,
    guard,
    review,
    sessions,
    denials: trajectory.denials,
    linkTtl: () => config.notify.linkTtl,
    log,
  });
  const notifier = notifyOnDecisions({
    config,
    review,
    links,
    metrics,
    log,
    admin: () => listeners.address('admin'),
  });
  if (notifier !== null) teardown.push('notifier', () => notifier.close());
  for (const l of Object.values(config.listen)) if (l.port !== 0) egress.addOwnPort(l.port);
  const pipeline = new Pipeline({
    config,
    guard,
    journal,
    sessions,
    held,
    egress,
    review,
    metrics,
    flows,
  });
  teardown.push('pipeline', () => pipeline.close());
  const identity = new Identity(config.agents);
  const handshakes = new HandshakeLog(log);
  teardown.push('handshake log', () => handshakes.close());
  const proxy = new ProxyParts({
    config,
    pipeline,
    identity,
    egress,
    flows,
    drain: listeners.drain,
    log,
    handshakeRefused: (tunnel, how, reason) =>
      handshakes.refused({
        session: tunnel.session,
        target: authority(tunnel.host, tunnel.port),
        handshake: how,
        reason,
      }),
  });
  teardown.push('proxy', () => proxy.close());
  await proxy.intercepting();
  const reverseProxy = config.bridge.upstream
    ? new ReverseProxy({
        upstream: config.bridge.upstream,
        onePath: config.bridge.protocol === 'mcp',
        timeoutMs: config.limits.upstreamTimeout,
        forwardAuthorization: config.bridge.forwardAuthorization,
        trust: upstreamTrust(config.tls.upstreamCa)(),
      })
    : null;
  if (reverseProxy !== null) teardown.push('bridge upstream', () => reverseProxy.close());
  const { tokens, file: adminTokenFile } = adminTokens(config);
  const keys = new AdminKeys(tokens);
  const reloader = new Reloader({
    config,
    guard,
    journal,
    identity,
    egress,
    held,
    flows,
    keys,
    log,
    rebuild: (next, running) => proxy.rebuild(next, running),
  });
  listeners.add('proxy', createProxyServer(proxy));
  listeners.add(
    'bridge',
    createBridgeServer({
      config,
      pipeline,
      identity,
      proxy: reverseProxy,
      tools: toolMap(config.bridge.tools),
      log,
      order: new SessionOrder(),
      sessions: new McpSessions(key),
      drain: listeners.drain,
      calls: trajectory.calls,
    }),
  );
  listeners.add(
    'admin',
    createAdminServer({
      api: new Api(config, guard, sessions, review, trajectory.index),
      metrics,
      health: trajectory.health,
      store: () => store.view(),
      act: (session, act) => store.action(session, act),
      keys,
      reload: (by) => reloader.reload(by).catch(reloadRefusal),
      decide: decideHandler(links),
      log,
    }),
  );
  teardown.push('listeners', () => listeners.close());
  await listeners.listen(config.listen);
  const [at, bridge, admin] = [
    listeners.address('proxy'),
    listeners.address('bridge'),
    listeners.address('admin'),
  ];
  for (const l of [at, bridge, admin]) egress.addOwnPort(l.port);
  return {
    config,
    guard,
    journal,
    sessions,
    review,
    pipeline,
    proxy: at,
    bridge,
    admin,
    adminTokenFile,
    restored: trajectory.restored,
    health: trajectory.health,
    store,
    reload: (by) => reloader.reload(by),
    async stop() {
      const began = performance.now();
      await teardown.close();
      return { ms: Math.round(performance.now() - began), cut: listeners.cut };
    },
  };
}

/**
 * What a failed start throws, once what it opened is closed: a TrajgateError as it came; any
 * other failure is logged with its stack (a bug, or an OS error nothing foresaw) and reported
 * as E_INTERNAL with its message.
 */
function startFailure(err: unknown, log: Logger): TrajgateError {
  if (isTrajgateError(err)) return err;
  log.error({ err }, 'start failed');
  const message =
    errnoCode(err) !== undefined
      ? systemMessage(err)
      : err instanceof Error
        ? err.message
        : String(err);
  return new TrajgateError('E_INTERNAL', `start failed: ${message}`);
}
