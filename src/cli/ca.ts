import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadOperatorConfig } from '../config/operator-config.js';
import { TrajgateError } from '../errors.js';
import { usageOf } from './help.js';

/**
 * `ca init` creates the local CA for TLS interception; `ca show` says where it is and how to
 * trust it. The certificate code (node-forge) is loaded only here and when interception is on:
 * a plain proxy does not carry it.
 */
export async function ca(argv: string[], print: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { dir: { type: 'string' }, config: { type: 'string' }, force: { type: 'boolean' } },
  });
  const [action, extra] = positionals;
  if ((action !== 'init' && action !== 'show') || extra !== undefined) {
    throw new TrajgateError('E_USAGE', usageOf('ca'));
  }
  const dir =
    values.dir !== undefined ? resolve(values.dir) : loadOperatorConfig(values.config).tls.ca;
  const { initCa, loadCa, trustInstructions } = await import('../tls/ca.js');
  const authority = action === 'init' ? initCa(dir, values.force === true) : loadCa(dir);
  if (action === 'init')
    print(`created a CA in ${dir} (the key is ca-key.pem, mode 0600: keep it secret)`);
  print(trustInstructions(authority));
  return 0;
}
