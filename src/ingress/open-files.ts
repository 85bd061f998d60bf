import { readFileSync } from 'node:fs';

/** Files trajgate keeps open besides its connections: journal, listeners, store, webhook, Node's own. */
export const OWN_FILES = 64;
/** A client connection's files at most: its socket and its upstream's (a tunnel's two ends). */
export const FILES_PER_CONNECTION = 2;

/**
 * The process's open-files limit (soft RLIMIT_NOFILE, what `ulimit -n` sets; Node raises it to
 * the hard limit as it starts), from /proc/self/limits: Node has no call for it. Infinity when
 * unlimited or where it cannot be read (not Linux).
 */
export function openFilesLimit(limits = readLimits()): number {
  const soft = /^Max open files\s+(\d+)/m.exec(limits)?.[1];
  return soft === undefined ? Infinity : Number(soft);
}

function readLimits(): string {
  try {
    return readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return '';
  }
}

/**
 * The client connections `limit` open files leave room for. Past the limit the kernel refuses
 * the accept (EMFILE) and libuv closes the connection unseen, with no event for trajgate to log
 * or answer; so a connection over this many is refused with a 503 first.
 */
export function connectionsFor(limit: number): number {
  return Math.max(1, Math.floor((limit - OWN_FILES) / FILES_PER_CONNECTION));
}
