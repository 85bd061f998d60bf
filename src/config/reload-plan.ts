import { createHash } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { TrajgateError } from '../errors.js';
import type { Config } from './load.js';
import { EMBEDDED_DEFAULT, parseConfig, readConfigFile } from './load.js';
import { dataInWorkspaces } from './own-files.js';

/** The running configuration: readers see `Config`; only the gateway swaps its sections. */
export type RunningConfig = { -readonly [K in keyof Config]: Config[K] };

/** What a reload would do, worked out before anything changes. */
export interface ReloadPlan {
  /** The running config's sections after the reload (kept where a restart is needed). */
  readonly next: Config;
  /** SHA-256 of the file's bytes, as read. */
  readonly sha256: string;
  /** Keys whose new values only take effect after a restart (their old values stay). */
  readonly restartNeeded: readonly string[];
}

/**
 * Keys fixed for the life of a process: the listeners and journal are open, the bridge's
 * routes and the notifier are built once, Node's HTTP parsers take header limits at creation,
 * the CA's key is loaded once. Each is reported, and the running value kept.
 */
const FIXED: readonly (readonly [string, (c: Config) => unknown])[] = [
  ['listen.proxy', (c) => c.listen.proxy],
  ['listen.bridge', (c) => c.listen.bridge],
  ['listen.admin', (c) => c.listen.admin],
  ['journal', (c) => c.journal],
  ['journalFsync', (c) => c.journalFsync],
  ['bridge', (c) => c.bridge],
  ['notify', (c) => c.notify],
  ['tls.ca', (c) => c.tls.ca],
  ['limits.headerBytes', (c) => c.limits.headerBytes],
  ['limits.headerTimeout', (c) => c.limits.headerTimeout],
  ['policy.recentEvents', (c) => c.policy.recentEvents],
];

/**
 * Reads and validates the running config's file again. Throws TrajgateError (E_CONFIG_*) with
 * every problem when the file cannot be used; the running config is not touched either way.
 */
export function planReload(running: Config, env: NodeJS.ProcessEnv = process.env): ReloadPlan {
  const file = running.source;
  if (file === EMBEDDED_DEFAULT) {
    throw new TrajgateError(
      'E_CONFIG_READ',
      'started on the embedded default: there is no config file to read again (start with --config FILE)',
    );
  }
  const bytes = readConfigFile(file);
  // The workspaces are checked against the data paths that stay: the running ones.
  const loaded = parseConfig(bytes.toString('utf8'), file, dirname(resolve(file)), env, {
    checks: (config) => dataInWorkspaces(keepFixed(running, config)),
  });
  const restartNeeded = FIXED.filter(
    ([, read]) => JSON.stringify(read(running)) !== JSON.stringify(read(loaded)),
  ).map(([key]) => key);
  const next = keepFixed(running, loaded);
  return {
    next,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    restartNeeded,
  };
}

/** The loaded config with every fixed key at its running value. */
function keepFixed(running: Config, loaded: Config): Config {
  return {
    ...loaded,
    listen: running.listen,
    journal: running.journal,
    journalFsync: running.journalFsync,
    bridge: running.bridge,
    notify: running.notify,
    tls: { ...loaded.tls, ca: running.tls.ca },
    limits: {
      ...loaded.limits,
      headerBytes: running.limits.headerBytes,
      headerTimeout: running.limits.headerTimeout,
    },
    policy: { ...loaded.policy, recentEvents: running.policy.recentEvents },
  };
}
