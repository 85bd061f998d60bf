import { parseArgs } from 'node:util';
import { loadOperatorConfig } from '../config/operator-config.js';
import { chainFiles, verifyChain } from '../journal/verify.js';

/**
 * Checks the journal's hash chain: the given files in order, else the configured journal with
 * all its rotated files. A torn last line is a warning (exit 0): a crash leaves one.
 */
export function verify(
  argv: string[],
  print: (line: string) => void,
  warn: (line: string) => void,
): number {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { config: { type: 'string' } },
  });
  const files =
    positionals.length > 0
      ? positionals
      : chainFiles(loadOperatorConfig(values.config).journal.path);
  const { records, torn } = verifyChain(files);
  if (torn !== null) warn(`trajgate: warning: ${torn}`);
  const where = files.length > 1 ? ` in ${files.length} files` : '';
  print(`ok: ${records} records${where}, chain intact`);
  return 0;
}
