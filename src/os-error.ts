import { statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname } from 'node:path';
import type { ErrorCode } from './errors.js';
import { errnoCode, TrajgateError } from './errors.js';

/**
 * An OS error as a user can act on it: the code, what trajgate was doing to which path (or
 * address) and under which config key, and a likely fix. A bare `EACCES: permission denied,
 * open '…'` names neither the user trajgate runs as nor what to change.
 */
export interface OsPlace {
  /** What trajgate was doing: `read`, `list`, `write`, `create`, `open`, `listen on`, … */
  readonly op: string;
  /** The path or address it was done to. */
  readonly path: string;
  /** What the path is, when its name does not say: `the journal's folder`. */
  readonly what?: string;
  /** The config key or option that names the path, so the fix can say what to change. */
  readonly key?: string;
  /** The path is a folder: one to create is made for the user, not its parent given away. */
  readonly folder?: boolean;
  /** Fixes that fit this place better than the general ones (FIXES), by errno code. */
  readonly fixes?: Readonly<Record<string, string>>;
}

/** Operations that only read: permission to fix is on the path itself, not its folder. */
const READS = new Set(['read', 'list']);
/** Codes where the user trajgate runs as (and who owns the path) is the point. */
const PERMISSION = new Set(['EACCES', 'EPERM']);
/** Operations on an address, not a file: no owner to name. */
const ADDRESSES = new Set(['listen on']);

interface Context extends OsPlace {
  readonly uid: number;
  /** The path, or its nearest existing folder when it does not exist yet. */
  readonly existing: string;
  /** What to change: `or change KEY`, or nothing without a key. */
  readonly instead: string;
}

/** Per errno code: what it means here and a likely fix. */
export const FIXES: Readonly<Record<string, { what: string; fix: (c: Context) => string }>> = {
  EACCES: {
    what: 'permission denied',
    fix: (c) =>
      READS.has(c.op)
        ? `make it readable by uid ${c.uid} (e.g. \`chown ${c.uid} ${c.path}\` or \`chmod o+r ${c.path}\`)${c.instead}`
        : c.folder && c.existing !== c.path
          ? `create it for uid ${c.uid} (e.g. \`mkdir -p ${c.path} && chown ${c.uid} ${c.path}\`)${c.instead}`
          : `let uid ${c.uid} write to ${c.existing} (e.g. \`chown ${c.uid} ${c.existing}\`)${c.instead}`,
  },
  EPERM: {
    what: 'operation not permitted',
    fix: (c) => `run trajgate as the owner of ${c.existing}, or \`chown ${c.uid} ${c.existing}\``,
  },
  EEXIST: {
    what: 'it already exists',
    fix: (c) => `remove or move it${c.instead || ', or choose another path'}`,
  },
  ENOENT: {
    what: 'no such file or folder',
    fix: (c) => `check the path${c.instead}`,
  },
  ENOTDIR: {
    what: 'a part of the path is a file, not a folder',
    fix: (c) => `move that file away${c.instead || ', or choose another path'}`,
  },
  EISDIR: { what: 'it is a folder', fix: (c) => `name a file${c.instead}` },
  ENOSPC: {
    what: 'no space left on the device',
    fix: (c) =>
      `free space on its filesystem (\`df -h ${c.existing}\` shows it)${c.instead || ', or choose a path on another one'}`,
  },
  EDQUOT: {
    what: "the user's disk quota is used up",
    fix: (c) => `free space or raise uid ${c.uid}'s quota${c.instead}`,
  },
  EFBIG: {
    what: "larger than this process's file-size limit allows",
    fix: () =>
      'raise the file-size limit (`ulimit -f`; LimitFSIZE= in a systemd unit; `--ulimit fsize=` for docker run)',
  },
  EROFS: {
    what: 'the filesystem is read-only',
    fix: (c) =>
      `mount it read-write (in a container: a writable volume)${c.instead || ', or choose a path on a writable filesystem'}`,
  },
  EMFILE: {
    what: 'too many open files in this process',
    fix: () =>
      'raise the limit of open files (`ulimit -n`; LimitNOFILE= in a systemd unit; `--ulimit nofile=` for docker run)',
  },
  ENFILE: {
    what: 'too many open files on this host',
    fix: () => 'close other programs or raise fs.file-max (`sysctl fs.file-max`)',
  },
  ELOOP: { what: 'too many symbolic links (a loop)', fix: () => 'fix the links on the path' },
  ENAMETOOLONG: { what: 'the name is too long', fix: (c) => `choose a shorter path${c.instead}` },
  EADDRINUSE: {
    what: 'address already in use',
    fix: (c) =>
      `another process listens there (\`ss -ltnp 'sport = :${c.path.slice(c.path.lastIndexOf(':') + 1)}'\` names it): stop it${c.instead || ', or choose another port'}`,
  },
  EADDRNOTAVAIL: {
    what: 'no interface of this host has that address',
    fix: (c) =>
      `listen on 127.0.0.1, 0.0.0.0 or an address \`ip -brief address\` lists${c.instead}`,
  },
};

/** The message for `err` met doing `place`; the error's own text where the code is not known. */
export function osMessage(err: unknown, place: OsPlace): string {
  const code = errnoCode(err);
  const known = code === undefined ? undefined : FIXES[code];
  const uid = process.getuid?.() ?? -1;
  const file = !ADDRESSES.has(place.op);
  const existing = file ? nearestExisting(place.path) : place.path;
  const c: Context = {
    ...place,
    uid,
    existing,
    instead: place.key === undefined ? '' : `, or change ${place.key}`,
  };
  const where = `${place.what === undefined ? '' : `${place.what} `}${place.path}${place.key === undefined ? '' : ` (${place.key})`}`;
  const fix = code === undefined ? undefined : (place.fixes?.[code] ?? known?.fix(c));
  // Node's own text repeats the code (`EIO: i/o error, write`): said once.
  const what = known?.what ?? String((err as Error).message ?? err).replace(/^E[A-Z]+: /, '');
  const head =
    code === undefined
      ? `cannot ${place.op} ${where}: ${what}`
      : PERMISSION.has(code)
        ? `${code}: cannot ${place.op} ${where} as ${runningAs()}${file ? ownership(place.path, existing) : ''}`
        : `${code}: cannot ${place.op} ${where}: ${what}`;
  return fix === undefined ? head : `${head}; ${fix}`;
}

/** What each syscall was doing, in the words osMessage uses. */
const SYSCALLS: Readonly<Record<string, string>> = {
  open: 'open',
  read: 'read',
  write: 'write',
  mkdir: 'create',
  rename: 'rename',
  unlink: 'remove',
  rmdir: 'remove',
  rm: 'remove',
  scandir: 'list',
  stat: 'read',
  lstat: 'read',
  access: 'open',
  fsync: 'write',
  fdatasync: 'write',
  ftruncate: 'write',
  copyfile: 'copy',
  listen: 'listen on',
  bind: 'listen on',
};

/**
 * The message of an error met deep inside an operation: Node's SystemError names its syscall
 * and path (or address), `known` fills in what it does not (a write by descriptor has no path).
 * An error that is no OS error keeps its own message.
 */
export function systemMessage(err: unknown, known: Partial<OsPlace> = {}): string {
  const e = err as { syscall?: string; path?: string; address?: string; port?: number };
  if (errnoCode(err) === undefined || typeof e.syscall !== 'string')
    return (err as Error).message ?? String(err);
  const host = e.address?.includes(':') ? `[${e.address}]` : e.address;
  const address = host === undefined ? undefined : `${host}:${e.port ?? 0}`;
  const path = e.path ?? address ?? known.path;
  if (path === undefined) return (err as Error).message;
  return osMessage(err, { ...known, op: SYSCALLS[e.syscall] ?? known.op ?? e.syscall, path });
}

/** osMessage as a TrajgateError with `code`. */
export function osError(code: ErrorCode, err: unknown, place: OsPlace): TrajgateError {
  return new TrajgateError(code, osMessage(err, place));
}

/** The user trajgate runs as, by name where the system has one for its uid. */
export function runningAs(): string {
  const uid = process.getuid?.() ?? -1;
  try {
    return `user ${userInfo().username} (uid ${uid})`;
  } catch {
    return `uid ${uid}`;
  }
}

/** `, owned by uid 0 with mode 0600`, or of the nearest folder that exists; empty if unknown. */
function ownership(path: string, existing: string): string {
  try {
    const st = statSync(existing);
    const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
    return existing === path
      ? `, owned by uid ${st.uid} with mode ${mode}`
      : ` (${existing} is owned by uid ${st.uid} with mode ${mode})`;
  } catch {
    // A folder above may be closed to us: the message still names the path and the user.
    return '';
  }
}

/** The path if it exists (or cannot be looked at), else its nearest folder that does. */
export function nearestExisting(path: string): string {
  for (let p = path; ; p = dirname(p)) {
    try {
      statSync(p);
      return p;
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT' || dirname(p) === p) return p;
    }
  }
}
