import { fileURLToPath, pathToFileURL } from 'node:url';
import { isInside, pathReadings } from '../event/paths.js';

export interface RootsChecked {
  /** What the server receives: the roots inside the workspace, as file: URIs of their paths. */
  readonly kept: { readonly uri: string }[];
  /** The roots removed, as the agent sent them (`uri`, or the JSON of a malformed entry). */
  readonly removed: string[];
}

/**
 * A client's `roots/list` answer, which server-filesystem takes as its new allowed directories
 * (replacing the ones it was started with): only roots inside the workspace go on, so an agent
 * cannot widen the server past it. A root counts only as a `file://` URI (the server reads
 * anything else as a path of its own: relative to its cwd, `~` to its home).
 */
export function rootsInside(roots: readonly unknown[], workspace: string): RootsChecked {
  const kept: { uri: string }[] = [];
  const removed: string[] = [];
  for (const root of roots) {
    const uri = (root as { uri?: unknown } | null)?.uri;
    const path = typeof uri === 'string' ? insidePath(uri, workspace) : null;
    if (path === null) {
      removed.push(typeof uri === 'string' ? uri : JSON.stringify(root).slice(0, 200));
      continue;
    }
    kept.push({ ...(root as object), uri: pathToFileURL(path).href });
  }
  return { kept, removed };
}

function insidePath(uri: string, workspace: string): string | null {
  if (!uri.startsWith('file://')) return null;
  let file: string;
  try {
    file = fileURLToPath(uri);
  } catch {
    return null;
  }
  const { path, alias } = pathReadings(file, '/');
  if (path === null || !isInside(path, workspace)) return null;
  return alias === null || isInside(alias, workspace) ? path : null;
}
