import { readFileSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { errnoCode, TrajgateError } from '../errors.js';

/**
 * Reads one of the CA's files, with an error that says what to do: a CA made on the host is
 * often owned by the host's user while the gateway runs as another (the image's `node`, uid
 * 1000), and a bare EACCES names neither.
 */
export function readCaFile(path: string, dir: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT')
      throw new TrajgateError(
        'E_CONFIG_READ',
        `no CA in ${dir}: run \`trajgate ca init --dir ${dir}\``,
      );
    if (code === 'EACCES' || code === 'EPERM')
      throw new TrajgateError('E_CONFIG_READ', unreadable(path, code));
    throw new TrajgateError('E_CONFIG_READ', `cannot read ${path}: ${(err as Error).message}`);
  }
}

function unreadable(path: string, code: string): string {
  const me = runningAs();
  let owner = '';
  try {
    const st = statSync(path);
    owner = `, owned by uid ${st.uid} with mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}`;
  } catch {
    // The folder itself may be closed to us; the message still names the path and the user.
  }
  return (
    `${code}: cannot read ${path} (tls.ca) as ${me.name}${owner}; ` +
    `make it readable by uid ${me.uid} (e.g. \`chown ${me.uid} ${path}\`, keeping mode 0600 for the key) ` +
    'or let trajgate make its own CA (`trajgate ca init --dir DIR` as that user)'
  );
}

/** The user the gateway runs as, by name where the system has one for its uid. */
function runningAs(): { name: string; uid: number } {
  const uid = process.getuid?.() ?? -1;
  try {
    return { name: `user ${userInfo().username} (uid ${uid})`, uid };
  } catch {
    return { name: `uid ${uid}`, uid };
  }
}
