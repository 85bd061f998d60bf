import { parseArgs } from 'node:util';
import type { Config } from '../config/load.js';
import { defaultConfig, EMBEDDED_DEFAULT, loadConfigFile } from '../config/load.js';
import { startChecks } from './start-checks.js';
import { fdLines } from './fd-limit.js';
import { openFilesLimit } from '../ingress/open-files.js';
import type { HostPort } from '../config/formats.js';
import { formatHostPort } from '../config/formats.js';
import { redisWhere } from '../state/connect.js';
import { startGateway } from '../gateway.js';
import { createLogger } from '../log.js';

/** The exit code of a stop that had to cut requests, tunnels or connections at the deadline. */
export const EXIT_CUT = 3;

/**
 * Runs the gateway on a config (or the embedded default) until SIGTERM or SIGINT, then drains
 * in-flight requests and syncs the journal. Exits 0 when everything drained, EXIT_CUT when
 * something still open at `limits.drainTimeout` was cut; one line says which.
 */
export async function start(argv: string[], say: (line: string) => void): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { config: { type: 'string' } } });
  // Everything that would stop it is found before anything is opened, all at once.
  const config =
    values.config === undefined
      ? defaultConfig(process.cwd(), process.env, startChecks)
      : loadConfigFile(values.config, process.env, { checks: startChecks });
  const log = createLogger();
  const gateway = await startGateway(config, { log });
  const paused = [...gateway.guard.sessions()].filter(([, s]) => s.pausedAt !== null).length;
  const proxy = formatHostPort(gateway.proxy);
  const credentials = config.agents ? `${config.agents[0]?.id}:TOKEN@` : '';
  say(`trajgate: config ${config.source}; workspace ${config.workspace}`);
  say(
    `trajgate: journal ${config.journal.path} (${gateway.restored} records restored, ${paused} session(s) paused)`,
  );
  const shared = config.state.redis;
  if (config.state.store === 'redis' && shared) {
    const { up, error } = gateway.store.view();
    say(
      `trajgate: state shared in ${redisWhere(shared)} (prefix ${shared.prefix}, replica ${gateway.store.replica}): ${up ? 'connected' : `not answering (${error}): requests are refused until it does`}`,
    );
  }
  say(`trajgate: proxy listening on http://${proxy}`);
  if (gateway.socks !== null)
    say(
      `trajgate: SOCKS5 listening on ${formatHostPort(gateway.socks)} (socks5h://${credentials}${formatHostPort(gateway.socks)})`,
    );
  for (const line of fdLines(config, openFilesLimit())) say(line);
  if (allowsNothing(config))
    say('trajgate: allows nothing yet: add network.allow (until then each request is reviewed)');
  if (config.tls.intercept.length > 0)
    say(
      `trajgate: TLS interception for ${config.tls.intercept.join(', ')} (CA ${config.tls.ca}; agents must trust it: trajgate ca show)`,
    );
  say(`trajgate: ${bridgeLine(config, gateway.bridge)}`);
  const admin = formatHostPort(gateway.admin);
  say(`trajgate: review page on http://${admin}/ (admin API under /api/, metrics at /metrics)`);
  if (gateway.adminTokenFile)
    say(`  admin token (Authorization: Bearer …) is in ${gateway.adminTokenFile}`);
  if (!isLoopback(gateway.admin.host))
    say(
      `  warning: the admin listener on ${admin} is reachable beyond this host; its token is all that guards it. Publish it on loopback only (docker run -p 127.0.0.1:${gateway.admin.port}:${gateway.admin.port}).`,
    );
  // Both cases: curl and git read only the lower-case names, many other clients the upper.
  const url = `http://${credentials}${proxy}`;
  say(
    `  point an agent at it: HTTP_PROXY=${url} HTTPS_PROXY=${url} http_proxy=${url} https_proxy=${url}`,
  );
  const env = ['trajgate env', config.agents?.[0]?.id ?? ''];
  if (config.source !== EMBEDDED_DEFAULT) env.push('--config', config.source);
  say(
    `  \`${env.filter(Boolean).join(' ')}\` prints the rest: NO_PROXY, CA trust, JVM flags, TRAJGATE_BRIDGE for hooks`,
  );
  if (!config.agents) {
    say(
      '  warning: no `agents` configured, so the client address names the session: an agent able to use several source addresses escapes per-session counting. Configure `agents` wherever agents share a host network.',
    );
  }
  // SIGHUP re-reads the config file (as POST /api/reload does); a bad file keeps the old one.
  const onHangup = () => {
    gateway.reload('SIGHUP').then(
      (r) =>
        say(
          `trajgate: config reloaded from ${r.file} (sha256 ${r.sha256.slice(0, 12)}…; ${r.closed} tunnel(s) closed${r.restartNeeded.length ? `; needs a restart to change: ${r.restartNeeded.join(', ')}` : ''})`,
        ),
      (err: Error & { details?: readonly string[] }) =>
        say(
          [
            `trajgate: reload refused, running config kept: ${err.message}`,
            ...(err.details ?? []).map((d) => `  ${d}`),
          ].join('\n'),
        ),
    );
  };
  process.on('SIGHUP', onHangup);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  process.off('SIGHUP', onHangup);
  say(`trajgate: stopping (draining for up to ${gateway.config.limits.drainTimeout} ms)`);
  const { ms, cut } = await gateway.stop();
  if (cut === null) {
    say(`trajgate: stopped in ${ms} ms; everything drained; journal synced`);
    return 0;
  }
  say(
    `trajgate: stopped in ${ms} ms; cut at the drain deadline: ${cut.requests} request(s), ${cut.tunnels} tunnel(s), ${cut.connections} connection(s); journal synced`,
  );
  return EXIT_CUT;
}

/** Where tool calls go: MCP clients use any path on the bridge; runner hooks POST /events. */
function bridgeLine(config: Config, at: HostPort): string {
  const base = `http://${formatHostPort(at)}`;
  const upstream = config.bridge.upstream;
  if (upstream === undefined)
    return `bridge on ${base}/: runner hooks only (POST /events; no bridge.upstream)`;
  const front =
    config.bridge.protocol === 'mcp' ? `MCP at ${base}/mcp` : `HTTP tool routes at ${base}/`;
  return `bridge: ${front} → upstream ${upstream} (runner hooks: POST ${base}/events)`;
}

/** No allow pattern anywhere: not in network.allow, an agent's allow, nor a role's. */
function allowsNothing(config: Config): boolean {
  const lists = [
    config.network.allow,
    ...(config.agents ?? []).map((a) => a.allow),
    ...Object.values(config.roles).map((r) => r.allow),
  ];
  return lists.every((list) => list.length === 0);
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}
