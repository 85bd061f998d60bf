import { parseArgs } from 'node:util';
import { defaultConfig, loadConfigFile } from '../config/load.js';
import { verifyChain } from '../journal/verify.js';

/** Checks the journal's hash chain: the given files in order, else the configured journal. */
export function verify(argv: string[], print: (line: string) => void): number {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { config: { type: 'string' } },
  });
  const files =
    positionals.length > 0
      ? positionals
      : [(values.config === undefined ? defaultConfig() : loadConfigFile(values.config)).journal];
  print(`ok: ${verifyChain(files)} records, chain intact`);
  return 0;
}
