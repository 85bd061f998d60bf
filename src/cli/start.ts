import { parseArgs } from 'node:util';
import { defaultConfig, loadConfigFile } from '../config/load.js';
import { formatHostPort } from '../config/formats.js';
import { startGateway } from '../gateway.js';
import { createLogger } from '../log.js';

export const START_USAGE = 'trajgate start [--config FILE]';

/** The exit code of a stop that had to cut requests, tunnels or connections at the deadline. */
export const EXIT_CUT = 3;

/**
 * Runs the gateway on a config (or the embedded default) until SIGTERM or SIGINT, then drains
 * in-flight requests and syncs the journal. Exits 0 when everything drained, EXIT_CUT when
 * something still open at `limits.drainTimeout` was cut; one line says which.
 */
export async function start(argv: string[], say: (line: string) => void): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { config: { type: 'string' } } });
  const config = values.config === undefined ? defaultConfig() : loadConfigFile(values.config);
  const log = createLogger();
  const gateway = await startGateway(config, { log });
  const paused = [...gateway.guard.sessions()].filter(([, s]) => s.pausedAt !== null).length;
  const proxy = formatHostPort(gateway.proxy);
  const credentials = config.agents ? `${config.agents[0]?.id}:TOKEN@` : '';
  say(`trajgate: config ${config.source}; workspace ${config.workspace}`);
  say(
    `trajgate: journal ${config.journal} (${gateway.restored} records restored, ${paused} session(s) paused)`,
  );
  say(`trajgate: proxy listening on http://${proxy}`);
  say(
    `trajgate: tool bridge on http://${formatHostPort(gateway.bridge)}/ (${config.bridge.upstream ? `${config.bridge.protocol} → ${config.bridge.upstream}` : 'ingest only: POST /events'})`,
  );
  say(
    `trajgate: review page on http://${formatHostPort(gateway.admin)}/ (admin API under /api/, metrics at /metrics)`,
  );
  if (gateway.adminTokenFile)
    say(`  admin token (Authorization: Bearer …) is in ${gateway.adminTokenFile}`);
  say(
    `  point an agent at it: HTTP_PROXY=http://${credentials}${proxy} HTTPS_PROXY=http://${credentials}${proxy}`,
  );
  if (!config.agents) {
    say(
      '  warning: no `agents` configured, so the client address names the session: an agent able to use several source addresses escapes per-session counting. Configure `agents` wherever agents share a host network.',
    );
  }
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  say(`trajgate: stopping (draining for up to ${config.limits.drainTimeout} ms)`);
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
