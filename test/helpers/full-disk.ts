import {
  closeSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
} from 'node:fs';

/**
 * The access mode in /proc/self/fdinfo's octal `flags` (O_WRONLY 1, O_RDWR 2): the journal
 * writer's descriptor (appending, or the live file a rotation started), not readers' (O_RDONLY).
 */
const O_ACCMODE = 0o3;

/**
 * Points the journal writer's open descriptor for `path` at /dev/full, so that every write
 * fails with ENOSPC as on a full disk; the returned function points it back at `path` (the
 * disk has room again). Linux only (/proc). Node has no dup2: the descriptor is closed and
 * reopened at once, and as POSIX gives the lowest free number, every lower one is taken first.
 */
export function fillDisk(path: string): () => void {
  const fd = writerFd(realpathSync(path));
  reopen(fd, '/dev/full');
  return () => reopen(fd, path);
}

function writerFd(path: string): number {
  for (const name of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${name}`);
    } catch {
      continue; // closed meanwhile (the listing's own descriptor)
    }
    if (target !== path) continue;
    const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${name}`, 'utf8'));
    if (flags && (Number.parseInt(flags[1] as string, 8) & O_ACCMODE) !== 0) return Number(name);
  }
  throw new Error(`${path} is not open for writing in this process`);
}

function reopen(fd: number, target: string): void {
  const fillers: number[] = [];
  try {
    let next = openSync('/dev/null', 'r');
    fillers.push(next);
    while (next < fd) fillers.push((next = openSync('/dev/null', 'r')));
    closeSync(fd);
    const got = openSync(target, 'a');
    if (got !== fd) {
      closeSync(got);
      throw new Error(`reopened ${target} as fd ${got}, not ${fd}`);
    }
  } finally {
    for (const f of fillers) closeSync(f);
  }
}
