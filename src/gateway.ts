import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { Egress } from './action/egress.js';
import { authority } from './action/forward.js';
import type { Lookup } from './action/egress.js';
import { HeldRequests } from './action/hold.js';
import { FlowRegistry } from './action/flow-registry.js';
import { ReverseProxy } from './action/reverse-proxy.js';
import { upstreamTrust } from './action/trust.js';
import type { HostPort } from './config/formats.js';
import { formatHostPort } from './config/formats.js';
import type { Config } from './config/load.js';
import { refuseDataInWorkspaces } from './config/own-files.js';
import type { RunningConfig } from './config/reload-plan.js';
import { osError } from './os-error.js';
import { compilePolicy } from './guard/compile.js';
import { Guard } from './guard/guard.js';
import { openStore } from './state/open.js';
import { JournalHealth } from './journal/health.js';
import { openJournal } from './journal/open.js';
import { SessionIndex } from './journal/session-index.js';
import { applyRecord } from './journal/rebuild.js';
import { snapshotOptions } from './review/snapshot.js';
import type { JournalRecord } from './journal/records.js';
import type { JournalWriter } from './journal/writer.js';
import { toolMap } from './event/tool-map.js';
import { HookCalls } from './ingress/hook-calls.js';
import { createBridgeServer } from './ingress/bridge.js';
import { McpSessions } from './ingress/mcp-sessions.js';
import { SessionOrder } from './ingress/session-order.js';
import { Identity } from './ingress/identity.js';
import type { ProxyContext } from './ingress/context.js';
import type { Cut } from './ingress/drain.js';
import { Drain, drained } from './ingress/drain.js';
import { serveHttp } from './ingress/http.js';
import { tunnelRefusal } from './ingress/context.js';
import { InnerHttp } from './ingress/inner-http.js';
import { createProxyServer } from './ingress/proxy.js';
import { ProxyParts } from './ingress/proxy-parts.js';
import { Pipeline } from './pipeline/pipeline.js';
import { rejudgeFlows } from './pipeline/flow-basis.js';
import type { ReloadResult } from './reload.js';
import type { StoreView } from './wire.js';
import { Reloader, reloadRefusal } from './reload.js';
import { createAdminServer } from './review/admin.js';
import { AdminKeys, adminTokens } from './review/admin-token.js';
import { Api } from './review/api.js';
import { Metrics } from './review/metrics.js';
import { DecisionLinks } from './review/decision-links.js';
import { Denials } from './review/pause-ends.js';
import { linkKey } from './review/link-key.js';
import { HandshakeLog } from './review/handshakes.js';
import { decideHandler } from './review/decide-page.js';
import { notifyOnDecisions } from './review/notices.js';
import { Review } from './review/review.js';
import { Sessions } from './review/sessions.js';

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
   * `limits.drainTimeout`, then what remains is cut; syncs the journal.
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

/** Builds the data path from a config, rebuilds state from the journal, and starts listening. */
export async function startGateway(
  initial: Config,
  options: GatewayOptions,
): Promise<RunningGateway> {
  const { log } = options;
  refuseDataInWorkspaces(initial);
  // One object every part reads; a reload swaps its sections (see Reloader).
  const config: RunningConfig = { ...initial };
  // What the guard and review remember, in one place (see TrajectoryStore).
  const opened = openStore(
    config.state,
    log,
    {
      storeOp: (op, seconds) => metrics.storeOp(op, seconds),
      storeError: (op) => metrics.storeError(op),
      storeUp: (up) => metrics.storeUp(up),
    },
    config.policy.recentEvents,
  );
  const { store } = opened;
  const guard = new Guard(compilePolicy(config), store);
  const review = new Review(config, log, store);
  const held = new HeldRequests(config.policy.holdTimeout);
  const metrics = new Metrics({
    held: () => held.count(),
    paused: () => [...guard.sessions()].filter(([, s]) => s.pausedAt !== null).length,
  });
  const index = new SessionIndex();
  const denials = new Denials();
  const health = new JournalHealth(config.journal.path, log, () => metrics.journalFailures.inc());
  const snapshot = {
    guard,
    store,
    review,
    denials,
    index,
    recentEvents: config.policy.recentEvents,
  };
  const calls = new HookCalls();
  // Records read back are not shared again: only those written from now on.
  let shared: (record: JournalRecord) => void = () => undefined;
  const { writer: journal, restored } = opened.locally(() =>
    openJournal(
      config.journal.path,
      (record) => {
        // A shared store holds the guard's state; this journal is this gateway's audit trail.
        if (opened.rebuildsFromJournal) applyRecord(guard, record);
        review.restore(record);
        calls.restore(record);
      },
      {
        fsyncMs: config.journalFsync,
        warn: (m) => log.warn(m),
        onWrite: (s) => metrics.journalWrite.observe(s),
        health,
        onAppend: (record, seq, offset, bytes) => {
          index.add(record, seq, offset, bytes);
          denials.observe(record, seq);
          review.noteHandshake(record, seq);
          shared(record as JournalRecord);
        },
        // Rotation's snapshots hold, and a restart restores, what `apply` rebuilds.
        ...snapshotOptions(config.journal, snapshot, (m) => log.warn(m)),
      },
    ),
  );
  const flows = new FlowRegistry(
    config.policy.holdTimeout,
    (basis, change, reason) => {
      try {
        journal.append({
          type: basis.kind === 'request' || basis.kind === 'tool' ? 'flow' : 'tunnel',
          flow: basis.kind,
          session: basis.session,
          target: basis.target,
          rid: basis.rid ?? undefined,
          change,
          reason,
        });
        return true;
      } catch {
        return false;
      }
    },
    (session) => guard.session(session)?.pausedAt != null,
  );
  const egress = new Egress({
    allowPrivate: config.network.allowPrivate,
    timeoutMs: config.limits.connectTimeout,
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  // Pause, resume and deny reach flows through the registry; every other change through
  // flow-basis's one judgement of what still holds.
  const watcher = {
    paused: (session: string) => flows.paused(session),
    resumed: (session: string) => flows.resumed(session),
    denied: (session: string) => flows.denied(session),
    rejudge: (cause: string) => rejudgeFlows({ config, guard, egress, flows }, cause),
  };
  const sessions = new Sessions(guard, journal, held, review, watcher, opened.replica);
  shared = await opened.start({ guard, review, sessions, log, history: restored > 0 });
  // The link key also tags MCP session ids with their agent (ingress/mcp-sessions.ts).
  const key = linkKey(config);
  const links = new DecisionLinks({
    key,
    guard,
    review,
    sessions,
    denials,
    linkTtl: () => config.notify.linkTtl,
    log,
  });
  const notifier = notifyOnDecisions({ config, review, links, metrics, log, admin: () => admin });
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
  const identity = new Identity(config.agents);
  const drain = new Drain();
  // Requests read from inside tunnels are served like absolute-form ones.
  const inner = new InnerHttp(config, drain, {
    serve: (req, res, url, tunnel) =>
      serveHttp(
        proxyContext,
        req,
        res,
        url,
        url.href,
        { session: tunnel.session, client: tunnel.client },
        performance.now(),
      ),
    refuse: (tunnel, status, reason, target) =>
      tunnelRefusal(proxyContext, tunnel, status, reason, target),
  });
  const handshakes = new HandshakeLog(log);
  const parts = await ProxyParts.build(config, egress, inner, (tunnel, status, reason, how) => {
    const target = authority(tunnel.host, tunnel.port);
    if (how !== undefined)
      handshakes.refused({ session: tunnel.session, target, handshake: how, reason });
    tunnelRefusal(proxyContext, tunnel, status, reason, target, how);
  });
  const proxyContext: ProxyContext = {
    pipeline,
    identity,
    get forwarder() {
      return parts.forwarder;
    },
    get limits() {
      return config.limits;
    },
    get upgrades() {
      return config.network.upgrades;
    },
    log,
    tunnels: new Map(),
    get capture() {
      return parts.capture;
    },
    inner,
    flows,
    drain,
    get intercept() {
      return parts.intercept;
    },
  };
  const proxyServer = createProxyServer(proxyContext);
  const reverseProxy = config.bridge.upstream
    ? new ReverseProxy({
        upstream: config.bridge.upstream,
        onePath: config.bridge.protocol === 'mcp',
        timeoutMs: config.limits.upstreamTimeout,
        forwardAuthorization: config.bridge.forwardAuthorization,
        trust: upstreamTrust(config.tls.upstreamCa)(),
      })
    : null;
  const bridgeServer = createBridgeServer({
    config,
    pipeline,
    identity,
    proxy: reverseProxy,
    tools: toolMap(config.bridge.tools),
    log,
    order: new SessionOrder(),
    sessions: new McpSessions(key),
    drain,
    calls,
  });
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
    rebuild: (next, running) => parts.rebuild(next, running),
  });
  const adminServer = createAdminServer({
    api: new Api(config, guard, sessions, review, index),
    metrics,
    health,
    store: () => opened.view(),
    act: (session, act) => opened.action(session, act),
    keys,
    reload: (by) => reloader.reload(by).catch(reloadRefusal),
    decide: decideHandler(links),
    log,
  });
  const servers = [proxyServer, bridgeServer, adminServer];
  for (const server of servers) drain.attach(server);
  let proxy: HostPort;
  let bridge: HostPort;
  let admin: HostPort;
  try {
    proxy = await listen(proxyServer, config.listen.proxy, 'listen.proxy');
    bridge = await listen(bridgeServer, config.listen.bridge, 'listen.bridge');
    admin = await listen(adminServer, config.listen.admin, 'listen.admin');
  } catch (err) {
    for (const server of servers) server.close();
    journal.close();
    throw err;
  }
  for (const l of [proxy, bridge, admin]) egress.addOwnPort(l.port);
  return {
    config,
    guard,
    journal,
    sessions,
    review,
    pipeline,
    proxy,
    bridge,
    admin,
    adminTokenFile,
    restored,
    health,
    store: opened,
    reload: (by) => reloader.reload(by),
    async stop() {
      const began = performance.now();
      drain.start();
      const closed = Promise.all(
        servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
      );
      held.releaseAll();
      const cut = await drained(drain, closed, config.limits.drainTimeout, log, (reason) =>
        flows.closeAll(reason),
      );
      await parts.close();
      reverseProxy?.close();
      inner.close();
      await notifier?.close();
      handshakes.close();
      pipeline.close();
      health.close();
      journal.close();
      opened.close();
      return { ms: Math.round(performance.now() - began), cut };
    },
  };
}

function listen(server: Server, at: HostPort, key: string): Promise<HostPort> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => {
      const privileged = `ports below 1024 need root or CAP_NET_BIND_SERVICE: choose a port of 1024 or more in ${key}`;
      const path = formatHostPort(at);
      reject(
        osError('E_LISTEN', err, { op: 'listen on', path, key, fixes: { EACCES: privileged } }),
      );
    });
    server.listen(at.port, at.host, () => {
      const address = server.address() as AddressInfo;
      resolve({ host: at.host, port: address.port });
    });
  });
}
