import { readFileSync } from 'node:fs';
import { errnoCode, TrajgateError } from '../errors.js';
import { osMessage } from '../os-error.js';

/**
 * Reads one of the CA's files, with an error that says what to do: a CA made on the host is
 * often owned by the host's user while the gateway runs as another (the image's `node`, uid
 * 1000), and a bare EACCES names neither. `check-config` reads them through here too.
 */
export function readCaFile(path: string, dir: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT')
      throw new TrajgateError(
        'E_CONFIG_READ',
        `no CA in ${dir}: run \`trajgate ca init --dir ${dir}\``,
      );
    const uid = process.getuid?.() ?? -1;
    const fix =
      `make it readable by uid ${uid} (e.g. \`chown ${uid} ${path}\`, keeping mode 0600 for the key) ` +
      'or let trajgate make its own CA (`trajgate ca init --dir DIR` as that user)';
    throw new TrajgateError(
      'E_CONFIG_READ',
      osMessage(err, { op: 'read', path, key: 'tls.ca', fixes: { EACCES: fix, EPERM: fix } }),
    );
  }
}
