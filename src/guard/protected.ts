import type { OwnPath, ProtectedFiles } from '../config/own-files.js';
import type { Event } from '../event/event.js';
import { PATH_KINDS } from '../event/event.js';
import { isInside } from '../event/paths.js';

import { TRAJGATE_FILES } from '../event/own-boundaries.js';

export { TRAJGATE_FILES };

/**
 * Why `event` reaches one of trajgate's own files, or null. Any reading counts (the real path,
 * the lexical `..` one, a hard link's inode): the path itself or anything inside a protected
 * folder; for a write, also a folder that holds one (moving or removing it takes the file
 * along); for a read of a whole tree (`tree`), also a folder that holds one (its content comes
 * back with the rest). A command is judged by its own path only: what it runs is not visible.
 */
export function protectedReach(p: ProtectedFiles, event: Event): string | null {
  const s = event.subject;
  if (s.type !== 'path' || !PATH_KINDS.has(event.kind)) return null;
  const wide = event.kind === 'write' || (event.kind === 'read' && s.tree === true);
  for (const reading of [s.path, s.alias]) {
    if (reading === null) continue;
    for (const own of p.folders) {
      if (isInside(reading, own.path))
        return reading === own.path
          ? `${reading} is ${own.what}`
          : `${reading} is inside ${own.what} ${own.path}`;
      if (wide && isInside(own.path, reading)) return holds(event, reading, own);
    }
    for (const own of p.files) {
      if (isInside(reading, own.path)) return `${reading} is ${own.what}`;
      if (wide && isInside(own.path, reading)) return holds(event, reading, own);
    }
  }
  for (const inode of s.inodes ?? []) {
    const same = p.inodes.get(inode);
    if (same !== undefined) return `${s.path ?? event.target} is a hard link to ${same}`;
  }
  return null;
}

function holds(event: Event, reading: string, own: OwnPath): string {
  const effect =
    event.kind === 'write' ? 'moving or removing it takes' : 'reading its tree returns';
  return `${reading} holds ${own.what} ${own.path} (${effect} it along)`;
}

/** The reason of a decision on one: what was reached, and that no approval covers it. */
export function protectedReason(event: Event, reach: string): string {
  return `${event.kind} of trajgate's own files (${reach}): they are never the agent's, and no approval covers them`;
}
