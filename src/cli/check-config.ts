import { TrajgateError } from '../errors.js';
import { loadConfigFile } from '../config/load.js';

export const CHECK_CONFIG_USAGE = 'trajgate check-config FILE';

/** Prints `ok` and a one-line summary, or throws the list of errors (each with its key path). */
export function checkConfig(argv: string[], print: (line: string) => void): number {
  const [file, extra] = argv;
  if (file === undefined || extra !== undefined || file.startsWith('-')) {
    throw new TrajgateError('E_USAGE', `usage: ${CHECK_CONFIG_USAGE}`);
  }
  const config = loadConfigFile(file);
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
