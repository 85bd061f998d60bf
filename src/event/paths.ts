import type { BigIntStats } from 'node:fs';
import { lstatSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, posix } from 'node:path';
import { errnoCode, TrajgateError } from '../errors.js';

/** Errors that mean "this part of the path does not exist (yet)": keep walking lexically. */
const MISSING = new Set(['ENOENT', 'ENOTDIR']);

/**
 * The path the operating system would act on, as the seed's `Path.resolve()` does: relative
 * targets resolve against `base`; existing components are resolved through symlinks in order,
 * so `ws/link/../x` follows `link` before `..` (a lexical normalise would keep it inside);
 * components after the first missing one cannot be links and are joined lexically.
 * Returns null when the path cannot be resolved (a loop, no permission): callers treat that
 * as outside, failing closed. With `unicode`, a missing component is read as the one entry of
 * its folder equal to it under NFC, as server-filesystem does (two such entries: E_PATH_REFUSED).
 */
export function physicalPath(
  target: string,
  base: string,
  options: PathOptions = {},
  depth = 0,
): string | null {
  if (depth > MAX_LINKS) return null;
  const abs = absolute(target, base);
  const quick = PLAIN.test(abs) ? plainPath(abs, options) : undefined;
  if (quick !== undefined) return quick;
  const whole = tryRealpath(abs);
  if (whole !== undefined) return whole;
  let cur = '/';
  let exists = true;
  for (const part of abs.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      cur = posix.dirname(cur);
      exists = true;
      continue;
    }
    let next = child(cur, part);
    if (!exists) {
      cur = next;
      continue;
    }
    if (options.unicode) next = twin(cur, part) ?? next;
    const real = tryRealpath(next);
    if (real === null) return null;
    if (real === undefined) {
      // A dangling link still leads somewhere: writing through it creates its target.
      const link = linkTarget(next);
      if (link === null) return null;
      if (link !== undefined) {
        const followed = physicalPath(link, cur, options, depth + 1);
        if (followed === null) return null;
        cur = followed;
        continue;
      }
      exists = false;
    }
    cur = real ?? next;
  }
  return cur;
}

export interface PathOptions {
  /** Match a missing component to a Unicode-equivalent entry (the tool server does). */
  readonly unicode?: boolean;
}

/** Links followed before giving up, as the kernel's ELOOP limit (40 on Linux). */
const MAX_LINKS = 40;

const child = (dir: string, name: string): string => (dir === '/' ? `/${name}` : `${dir}/${name}`);

/**
 * The entry of `dir` that `name` stands for when `name` itself is missing but an entry with
 * the same NFC form exists (NFD `cafe\u0301` for NFC `café`); undefined when none is needed.
 */
function twin(dir: string, name: string): string | undefined {
  const path = child(dir, name);
  let entries: string[];
  try {
    if (lstatSync(path, { throwIfNoEntry: false }) !== undefined) return undefined;
    entries = readdirSync(dir);
  } catch {
    return undefined;
  }
  const nfc = name.normalize('NFC');
  const equal = entries.filter((e) => e !== name && e.normalize('NFC') === nfc);
  if (equal.length > 1) {
    throw new TrajgateError(
      'E_PATH_REFUSED',
      `${JSON.stringify(path)} names no entry, and ${equal.length} entries of ${dir} are the same name in Unicode (${equal.map((e) => JSON.stringify(e)).join(', ')}): name one exactly`,
    );
  }
  return equal.length === 1 ? child(dir, equal[0] as string) : undefined;
}

/** No `.` or `..` segments: the common case, resolved without walking. */
const PLAIN = /^\/(?!.*(?:^|\/)\.\.?(?:\/|$))/;

/**
 * Two syscalls and no exception for the usual target, an existing file or a new file in an
 * existing folder (a thrown ENOENT costs more than the syscall). Undefined: walk instead.
 */
function plainPath(abs: string, options: PathOptions): string | null | undefined {
  let stat;
  try {
    stat = lstatSync(abs, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
  if (stat !== undefined)
    return stat.isSymbolicLink() ? (tryRealpath(abs) ?? undefined) : tryRealpath(abs);
  const dir = tryRealpath(posix.dirname(abs));
  if (typeof dir !== 'string') return dir === null ? null : undefined;
  if (options.unicode && twin(dir, posix.basename(abs)) !== undefined) return undefined;
  return dir === '/' ? `/${posix.basename(abs)}` : `${dir}/${posix.basename(abs)}`;
}

/** Where a link points (undefined: not a link; null: unreadable). */
function linkTarget(p: string): string | null | undefined {
  try {
    const stat = lstatSync(p, { throwIfNoEntry: false });
    return stat?.isSymbolicLink() ? readlinkSync(p) : undefined;
  } catch {
    return null;
  }
}

/** realpath, or undefined when missing, or null when unresolvable for another reason. */
function tryRealpath(p: string): string | null | undefined {
  try {
    return realpathSync.native(p);
  } catch (err) {
    return MISSING.has(errnoCode(err) ?? '') ? undefined : null;
  }
}

/**
 * A tool server may act on the physical path or normalise `..` lexically first (Node's
 * `path.resolve` does) and then follow links; when the two readings differ, both are kept and
 * the guard treats the target as inside only if both are.
 */
export function pathReadings(
  target: string,
  base: string,
  options: PathOptions = {},
): PathReadings {
  const abs = absolute(target, base);
  const path = within(physicalPath(abs, '/', options));
  if (!abs.split('/').includes('..')) return { path, alias: null, inodes: linked(path, null) };
  const alias = within(physicalPath(posix.normalize(abs), '/', options));
  if (alias === null) return { path: null, alias: null, inodes: undefined };
  const other = alias === path ? null : alias;
  return { path, alias: other, inodes: linked(path, other) };
}

/**
 * Joined as the OS joins a relative path to its cwd: `path.join` would remove `link/..`
 * lexically before the links are followed, and judge a place the OS does not act on.
 */
const absolute = (target: string, base: string): string =>
  isAbsolute(target) ? target : `${base}/${target}`;

/** The kernel's limits (Linux PATH_MAX, NAME_MAX): a longer path names nothing it can act on. */
const PATH_MAX = 4096;
const NAME_MAX = 255;

function within(path: string | null): string | null {
  if (path === null) return null;
  // Three UTF-8 bytes at most per UTF-16 unit: a short path is within both (the usual case).
  if (path.length * 3 <= NAME_MAX) return path;
  if (Buffer.byteLength(path) >= PATH_MAX) return null;
  for (const part of path.split('/')) if (Buffer.byteLength(part) > NAME_MAX) return null;
  return path;
}

export interface PathReadings {
  readonly path: string | null;
  readonly alias: string | null;
  /** `device:inode` of the readings that are files with hard links (see PathSubject). */
  readonly inodes?: readonly string[] | undefined;
}

/** A file's identity whatever its name: `device:inode`. */
export const fileIdentity = (st: BigIntStats): string => `${st.dev}:${st.ino}`;

/** The identities of the readings that are regular files with more than one name, if any. */
export function linked(path: string | null, alias: string | null): readonly string[] | undefined {
  let out: string[] | undefined;
  for (const p of [path, alias]) {
    if (p === null) continue;
    try {
      const st = statSync(p, { bigint: true, throwIfNoEntry: false });
      if (st?.isFile() && st.nlink > 1n) (out ??= []).push(fileIdentity(st));
    } catch {
      // Unreadable now: judged by its paths, as a path that cannot be resolved is.
    }
  }
  return out;
}

export type PathResolver = (target: string, base: string) => PathReadings;

/**
 * pathReadings with a bounded memo, for offline replay: a recorded trajectory is judged
 * against the file system as it is now, and re-resolving the same path a million times
 * costs a million syscalls. The live gateway resolves every time (links can change).
 */
export function memoPathReadings(max = 65_536): PathResolver {
  const memo = new Map<string, PathReadings>();
  return (target, base) => {
    const key = isAbsolute(target) ? target : `${base}\0${target}`;
    const hit = memo.get(key);
    if (hit) return hit;
    const readings = pathReadings(target, base);
    if (memo.size >= max) memo.delete(memo.keys().next().value as string);
    memo.set(key, readings);
    return readings;
  };
}

/** Inside means the root itself or below it: `/ws-evil` is not inside `/ws`. */
export function isInside(path: string, root: string): boolean {
  if (root === '/') return path.startsWith('/');
  return path === root || (path.startsWith(root) && path.charCodeAt(root.length) === 47);
}
