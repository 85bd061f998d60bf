import { TrajgateError } from '../errors.js';
import { loadConfigFile, missingWorkspaces } from '../config/load.js';
import { refuseDataInWorkspaces } from '../config/own-files.js';
import { usageOf } from './help.js';

/** Prints `ok` and a one-line summary, or throws the list of errors (each with its key path). */
export function checkConfig(argv: string[], print: (line: string) => void): number {
  const [file, extra] = argv;
  if (file === undefined || extra !== undefined || file.startsWith('-')) {
    throw new TrajgateError('E_USAGE', usageOf('check-config'));
  }
  const config = loadConfigFile(file);
  // As start would refuse it.
  const missing = missingWorkspaces(config);
  if (missing.length > 0)
    throw new TrajgateError('E_CONFIG_INVALID', `${file}: no such workspace`, missing);
  refuseDataInWorkspaces(config);
  print('ok');
  const agents = config.agents
    ? `${config.agents.length} agent(s)`
    : 'no agents (sessions by client address)';
  const boundaries = Object.keys(config.policy.boundaries).join(', ');
  print(
    `${file}: ${agents}; boundaries: ${boundaries}; ${config.network.allow.length} allow pattern(s)`,
  );
  return 0;
}
