import { Server } from 'node:http';
import type { Server as NetServer } from 'node:net';
import { authority } from '../action/forward.js';
import { ReverseProxy } from '../action/reverse-proxy.js';
import { upstreamTrust } from '../action/trust.js';
import type { Config } from '../config/load.js';
import { built, fixed, live, part } from '../config/parts.js';
import { bridgeServer } from '../ingress/tool-lists.js';
import { hintedToolMap } from './tool-hints.js';
import { toolMap } from '../event/tool-map.js';
import { compileToolPolicy } from '../event/tool-policy.js';
import { createBridgeServer } from '../ingress/bridge.js';
import { BRIDGE } from '../ingress/bridge-calls.js';
import { Identity } from '../ingress/identity.js';
import { McpSessions } from '../ingress/mcp-sessions.js';
import { createProxyServer } from '../ingress/proxy.js';
import { createLeanProxyServer } from '../ingress/lean/lean-server.js';
import { createSocksServer } from '../ingress/socks.js';
import { ProxyParts } from '../ingress/proxy-parts.js';
import { SessionOrder } from '../ingress/session-order.js';
import { rejudgeFlows } from '../pipeline/flow-basis.js';
import { Pipeline } from '../pipeline/pipeline.js';
import { HandshakeLog } from '../review/handshakes.js';
import type { LimitLog } from '../review/limit-log.js';
import type { Listeners } from './listeners.js';
import type { Opening, Trajectory } from './trajectory.js';

/** Node's HTTP parsers take their limits when a server is made: the listeners' and the inner one. */
const PARSERS = { limits: ['headerBytes', 'headerTimeout'] } as const;

/** The bridge's routes and its upstream, built once. */
const BRIDGE_ROUTES = {
  bridge: ['upstream', 'protocol', 'forwardAuthorization', 'tools', 'routes'],
} as const;

/** How the bridge reaches its upstream: a reload's applies from the next call on. */
const BRIDGE_UPSTREAM = { limits: ['upstreamTimeout'], tls: ['upstreamCa'] } as const;

/** How long an idle keep-alive connection stays: the proxy listener's, and HTTP read in tunnels. */
const KEEP_ALIVE = { limits: ['keepAliveIdle'] } as const;

const NONE: ReadonlySet<string> = new Set();

/** Which tools agents may see and call: compiled again on reload, applied from the next call. */
const TOOL_POLICY = { bridge: ['toolPolicy'], agents: true, roles: true } as const;

/** The data path's entry points, and what a reload does once its changes are in. */
export interface Ingress {
  readonly pipeline: Pipeline;
  /** node:http's server, or under `engine: lean` a TCP one (ingress/lean/lean-server.ts). */
  readonly proxy: NetServer;
  readonly bridge: Server;
  /** The SOCKS5 listener's server, judged on the proxy's path; listened on when `listen.socks` is set. */
  readonly socks: NetServer;
  /** Closes the live flows whose basis a reload took away (agents' credentials included). */
  settle(): number;
}

/**
 * Builds the pipeline and the proxy's and bridge's handlers on the trajectory; their servers
 * are listened on later (Listeners).
 */
export async function openIngress(
  config: Config,
  t: Trajectory,
  deps: Opening & {
    readonly listeners: Listeners;
    /** Tags MCP session ids with their agent (the link key). */
    readonly key: () => Buffer;
    readonly limitLog: LimitLog;
  },
): Promise<Ingress> {
  const { log, parts, teardown, listeners } = deps;
  const { guard, journal, sessions, held, egress, review, metrics, flows } = t;
  const pipeline = new Pipeline({
    config: t.deciding,
    credentials: t.credentials,
    guard,
    journal,
    sessions,
    held,
    egress,
    review,
    metrics,
    flows,
    toolMarks: t.toolPins.state,
  });
  teardown.push('pipeline', () => pipeline.close());
  const identity = new Identity(config.agents);
  let rotated: ReadonlySet<string> | 'all' = NONE;
  parts.add(
    part({
      name: 'agents',
      reads: { agents: true },
      configure: (next) => ({ install: () => void (rotated = identity.replace(next.agents)) }),
    }),
    fixed('HTTP parsers', PARSERS),
  );
  const handshakes = new HandshakeLog(log);
  teardown.push('handshake log', () => handshakes.close());
  const proxy = new ProxyParts(
    {
      egress,
      flows,
      pipeline,
      identity,
      credentials: t.credentials,
      drain: listeners.drain,
      log,
      limitLog: deps.limitLog,
      handshakeRefused: (tunnel, how, reason) =>
        handshakes.refused({
          session: tunnel.session,
          target: authority(tunnel.host, tunnel.port),
          handshake: how,
          reason,
        }),
    },
    config,
  );
  teardown.push('proxy', () => proxy.close());
  await proxy.intercepting(config);
  parts.add(...proxy.parts());
  const upstream = config.bridge.upstream;
  const reverseProxy =
    upstream === undefined
      ? null
      : new ReverseProxy({
          upstream,
          onePath: config.bridge.protocol === 'mcp',
          forwardAuthorization: config.bridge.forwardAuthorization,
          timeoutMs: config.limits.upstreamTimeout,
          trust: upstreamTrust(config.tls.upstreamCa)(),
        });
  if (reverseProxy !== null) {
    teardown.push('bridge upstream', () => reverseProxy.close());
    parts.add(
      part({
        name: 'bridge upstream',
        reads: BRIDGE_UPSTREAM,
        configure: (next) =>
          built(
            () => upstreamTrust(next.tls.upstreamCa)(),
            (trust) => reverseProxy.configure({ timeoutMs: next.limits.upstreamTimeout, trust }),
          ),
      }),
    );
  }
  const toolPolicy = { current: compileToolPolicy(config) };
  parts.add(
    part({
      name: 'tool policy',
      reads: TOOL_POLICY,
      configure: (next) =>
        built(
          () => compileToolPolicy(next),
          (compiled) => void (toolPolicy.current = compiled),
        ),
    }),
  );
  const bridge = live('bridge handlers', BRIDGE, config);
  parts.add(fixed('bridge routes', BRIDGE_ROUTES), bridge.part);
  let keepAliveIdle = config.limits.keepAliveIdle;
  // The listener's engine is fixed when it is made (a change needs a restart); `engine: lean`
  // forwards with the lean upstream client too (proxy-parts.ts), which a reload does change.
  const proxyServer =
    config.engine === 'lean'
      ? createLeanProxyServer(proxy, () => keepAliveIdle)
      : createProxyServer(proxy);
  // Both read it each time a response ends, so a reload applies from the next one.
  if (proxyServer instanceof Server) proxyServer.keepAliveTimeout = keepAliveIdle;
  parts.add(
    part({
      name: 'proxy keep-alive',
      reads: KEEP_ALIVE,
      configure: ({ limits }) => ({
        install: () => {
          keepAliveIdle = limits.keepAliveIdle;
          if (proxyServer instanceof Server) proxyServer.keepAliveTimeout = keepAliveIdle;
          proxy.inner.keepAlive(limits.keepAliveIdle);
          proxy.innerH2.keepAlive(limits.keepAliveIdle);
        },
      }),
    }),
  );
  return {
    pipeline,
    proxy: proxyServer,
    socks: createSocksServer(proxy),
    bridge: createBridgeServer({
      config: bridge.value,
      pipeline,
      identity,
      proxy: reverseProxy,
      tools: hintedToolMap(
        toolMap(config.bridge.tools),
        bridgeServer(config.bridge),
        t.toolPins.state,
      ),
      log,
      order: new SessionOrder(),
      sessions: new McpSessions(deps.key),
      drain: listeners.drain,
      calls: t.calls,
      credentials: t.credentials,
      toolPolicy,
      toolLists: t.toolPins,
    }),
    settle() {
      const basis = { config: t.deciding, guard, egress, flows, credentials: t.credentials };
      const closed = rejudgeFlows(basis, 'config reloaded', { rotated });
      // Held requests came with the credentials that changed: none of them is ever sent.
      const stale = rotated === 'all' ? held.sessions() : [...rotated];
      for (const session of stale) held.release(session, 'credentials');
      rotated = NONE;
      return closed;
    },
  };
}
