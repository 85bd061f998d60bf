import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Lookup } from './action/egress.js';
import type { HostPort } from './config/formats.js';
import type { Config } from './config/load.js';
import { refuseDataInWorkspaces } from './config/own-files.js';
import { fixed, live } from './config/parts.js';
import { errnoCode, isTrajgateError, TrajgateError } from './errors.js';
import type { Guard } from './guard/guard.js';
import type { Cut } from './ingress/drain.js';
import type { JournalHealth } from './journal/health.js';
import type { JournalWriter } from './journal/writer.js';
import { systemMessage } from './os-error.js';
import type { Pipeline } from './pipeline/pipeline.js';
import type { Review } from './review/review.js';
import type { Sessions } from './review/sessions.js';
import type { StoreView } from './wire.js';
import { openAdmin, openLinks } from './gateway/admin.js';
import { ConfigParts } from './gateway/config-parts.js';
import type { Credentials } from './gateway/credentials.js';
import { openCredentials } from './gateway/credentials.js';
import { openIngress } from './gateway/ingress.js';
import { Listeners } from './gateway/listeners.js';
import { LimitLog } from './review/limit-log.js';
import type { ReloadResult } from './gateway/reload.js';
import { Reloader, reloadRefusal } from './gateway/reload.js';
import { Teardown } from './gateway/teardown.js';
import type { ToolPins } from './gateway/tool-pins.js';
import { openTrajectory } from './gateway/trajectory.js';

export interface RunningGateway {
  /** The config it runs on: the last reload's, restart-needed keys at their running values. */
  readonly config: Config;
  /** The parts that hold config, each with the slice it runs on (see ConfigParts). */
  readonly parts: ConfigParts;
  readonly guard: Guard;
  readonly journal: JournalWriter;
  readonly sessions: Sessions;
  readonly review: Review;
  readonly pipeline: Pipeline;
  /** Where the proxy, bridge and admin listeners are (real ports when the config said 0). */
  readonly proxy: HostPort;
  readonly bridge: HostPort;
  readonly admin: HostPort;
  /** Where the SOCKS5 listener is; null unless `listen.socks` is set. */
  readonly socks: HostPort | null;
  /** The generated admin token's file, when the config names none. */
  readonly adminTokenFile: string | null;
  /** Records read back from the journal at start. */
  readonly restored: number;
  /** The credentials in force, with their sentinels. */
  readonly credentials: Credentials;
  /** Whether the journal can be written (GET /api/health). */
  readonly health: JournalHealth;
  /** Pinned tool definitions: what the bridge tells of every tools/list answer. */
  readonly toolPins: ToolPins;
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
  // Each part reads its slice of the config and takes a reload's changes to it (ConfigParts).
  const parts = new ConfigParts(initial);
  const opening = { log, parts, teardown };
  const credentials = openCredentials(initial, opening);
  const trajectory = await openTrajectory(initial, lookup, { ...opening, credentials });
  const { guard, review, held, journal, flows, egress, sessions } = trajectory;
  const drainTimeout = live('drain', { limits: ['drainTimeout'] }, initial);
  parts.add(drainTimeout.part);
  const limitLog = new LimitLog(log, trajectory.metrics);
  teardown.push('limit log', () => limitLog.close());
  const listeners = new Listeners(
    {
      log,
      drainTimeout: () => drainTimeout.value.limits.drainTimeout,
      releaseHeld: () => held.releaseAll(),
      closeTunnels: (reason) => flows.closeAll(reason),
    },
    limitLog,
  );
  const { links, key } = openLinks(initial, trajectory, { ...opening, listeners });
  const ingress = await openIngress(initial, trajectory, {
    ...opening,
    listeners,
    key,
    limitLog,
  });
  const reloader = new Reloader({ parts, journal, log, settle: () => ingress.settle() });
  const admin = openAdmin(initial, trajectory, {
    log,
    parts,
    links,
    reload: (by) => reloader.reload(by).catch(reloadRefusal),
  });
  listeners.add('proxy', ingress.proxy);
  listeners.add('bridge', ingress.bridge);
  listeners.add('admin', admin.server);
  if (initial.listen.socks !== undefined) listeners.add('socks', ingress.socks);
  parts.add(fixed('listeners', { listen: ['proxy', 'bridge', 'admin', 'socks'] }));
  // Its own ports are never an upstream, the configured ones before they listen.
  for (const l of Object.values(initial.listen)) if (l.port !== 0) egress.addOwnPort(l.port);
  teardown.push('listeners', () => listeners.close());
  await listeners.listen(initial.listen);
  const at = {
    proxy: listeners.address('proxy'),
    bridge: listeners.address('bridge'),
    admin: listeners.address('admin'),
    socks: initial.listen.socks === undefined ? null : listeners.address('socks'),
  };
  for (const l of Object.values(at)) if (l !== null) egress.addOwnPort(l.port);
  return {
    get config() {
      return parts.running;
    },
    parts,
    guard,
    journal,
    sessions,
    review,
    pipeline: ingress.pipeline,
    ...at,
    adminTokenFile: admin.tokenFile,
    restored: trajectory.restored,
    credentials,
    health: trajectory.health,
    toolPins: trajectory.toolPins,
    store: trajectory.store,
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
