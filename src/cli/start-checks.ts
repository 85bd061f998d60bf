import { statSync } from 'node:fs';
import { errnoCode } from '../errors.js';
import { osMessage } from '../os-error.js';
import { dataAccess } from './data-access.js';
import { listenerConflicts } from '../config/listeners.js';
import type { Config } from '../config/load.js';
import { dataInWorkspaces } from '../config/own-files.js';
import type { KeyPath, Locator, Problem } from '../config/problems.js';

/**
 * What would stop `start` on a config that validates, found before anything is opened:
 * `start` and `check-config` both run these (loadConfigFile's `checks`), so their problems
 * come with the schema's, all at once.
 */
export function startChecks(config: Config, at: Locator): Problem[] {
  return [
    ...missingWorkspaces(config),
    ...dataInWorkspaces(config),
    ...listenerConflicts(config, at),
    ...dataAccess(config),
  ];
}

/**
 * The configured workspaces that are not existing folders, each naming its key and path.
 * Checked at start (and by check-config), not on every load: offline replays judge paths that
 * need not exist.
 */
export function missingWorkspaces(config: Config): Problem[] {
  const named: [string, KeyPath, string][] = [['workspace', ['workspace'], config.workspace]];
  config.agents?.forEach((a, i) =>
    named.push([`agents[${i}].workspace`, ['agents', i, 'workspace'], a.workspace]),
  );
  const problems = new Map<string, Problem>();
  for (const [key, path, dir] of named) {
    if (problems.has(dir)) continue;
    let why = `${dir} is not a folder (change ${key})`;
    try {
      if (statSync(dir).isDirectory()) continue;
    } catch (err) {
      why =
        errnoCode(err) === 'ENOENT'
          ? `${dir} does not exist (create it, or change ${key})`
          : osMessage(err, { op: 'read', what: 'the workspace', path: dir, key });
    }
    problems.set(dir, { path, kind: 'no such workspace', text: `${key}: ${why}` });
  }
  return [...problems.values()];
}
