import { TrajgateError } from '../errors.js';
import { loadConfigFile } from '../config/load.js';
import { startChecks } from './start-checks.js';
import { usageOf } from './help.js';

/**
 * Prints `ok` and a one-line summary, or throws every error at once, sorted by line, each with
 * its key: the schema's and what would stop `start` (start-checks.ts), as the user running it.
 */
export function checkConfig(argv: string[], print: (line: string) => void): number {
  const [file, extra] = argv;
  if (file === undefined || extra !== undefined || file.startsWith('-')) {
    throw new TrajgateError('E_USAGE', usageOf('check-config'));
  }
  const config = loadConfigFile(file, process.env, { checks: startChecks });
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
