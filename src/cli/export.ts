import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadOperatorConfig } from '../config/operator-config.js';
import { TrajgateError } from '../errors.js';
import { osError } from '../os-error.js';
import { exportHar } from '../review/har.js';
import { usageOf } from './help.js';

/** Writes a session's HTTP exchanges from the journal (and captures) as a HAR 1.2 file. */
export function exportCommand(
  argv: string[],
  print: (line: string) => void,
  version: string,
): number {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      session: { type: 'string' },
      har: { type: 'string' },
      since: { type: 'string' },
      config: { type: 'string' },
    },
  });
  if (positionals.length > 0 || values.session === undefined || values.har === undefined) {
    throw new TrajgateError('E_USAGE', usageOf('export'));
  }
  const since = values.since === undefined ? 0 : Date.parse(values.since);
  if (Number.isNaN(since))
    throw new TrajgateError('E_USAGE', `--since ${values.since}: expected an ISO 8601 time`);
  const config = loadOperatorConfig(values.config);
  const har = exportHar(
    config.journal.path,
    join(dirname(config.journal.path), 'captures'),
    values.session,
    since,
    version,
  );
  if (har === null)
    throw new TrajgateError(
      'E_UNKNOWN_SESSION',
      `export: no session ${JSON.stringify(values.session)} in the journal ${config.journal.path}; nothing was written (trajgate sessions lists them)`,
    );
  try {
    writeFileSync(values.har, JSON.stringify(har, null, 2) + '\n');
  } catch (err) {
    throw osError('E_FILE_WRITE', err, { op: 'write', path: values.har, key: '--har' });
  }
  print(`wrote ${har.log.entries.length} entries for ${values.session} to ${values.har}`);
  return 0;
}
