import { posix } from 'node:path';
import { TrajgateError } from '../errors.js';
import type { EventInput } from '../event/event.js';
import { PATH_KINDS } from '../event/event.js';
import type { PathReadings } from '../event/paths.js';
import { pathReadings } from '../event/paths.js';
import type { ToolTarget } from '../event/tool-map.js';

/**
 * The events of a tool call, its path arguments resolved once and written back into the call
 * as the absolute paths judged: relative to the session's workspace (server-filesystem would
 * try its own roots in turn), through links, to the Unicode-equivalent entry the server would
 * pick. The server then has nothing left to read its own way. Throws E_PATH_REFUSED for a
 * spelling whose meaning depends on the server; arguments mapped to other kinds stay opaque.
 */
export function judgedPaths(targets: readonly ToolTarget[], workspace: string): EventInput[] {
  const resolved = new Map<string, PathReadings>();
  return targets.map(({ kind, target, tree, command, set }) => {
    if (!PATH_KINDS.has(kind)) return { kind, target };
    const why = serverDependent(target);
    if (why !== null) {
      throw new TrajgateError(
        'E_PATH_REFUSED',
        `path ${JSON.stringify(target.slice(0, 200))} ${why}; send an absolute path, or one relative to the workspace ${workspace}`,
      );
    }
    let readings = resolved.get(target);
    if (readings === undefined) {
      readings = pathReadings(target, workspace, { unicode: true });
      resolved.set(target, readings);
    }
    // Unresolvable (a link loop, no permission) is judged as outside; if still allowed (a
    // read), the lexical path goes on and the server meets the same failure.
    set(readings.path ?? posix.resolve(workspace, target));
    if (tree === true) return { kind, target, readings, tree };
    return command === undefined ? { kind, target, readings } : { kind, target, readings, command };
  });
}

/** Why the tool server may read this spelling as another path than trajgate would, or null. */
function serverDependent(target: string): string | null {
  if (target.startsWith('~')) return "starts with ~, the tool server's home, unknown here";
  if (/^file:/i.test(target)) return 'is a file: URI, which tool servers read differently';
  if (target.includes('\0')) return 'contains a NUL character';
  // An unpaired surrogate: Node writes U+FFFD in its place, other servers fail or differ.
  if (/[\uD800-\uDFFF]/u.test(target)) return 'is not valid Unicode';
  return null;
}
