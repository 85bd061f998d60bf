import { TrajgateError } from '../errors.js';
import { describe } from './validate.js';
import type { EventInput } from './event.js';

/** One event a tool call makes: its kind, and the argument path that holds its target. */
export interface ToolEventSpec {
  readonly kind: string;
  /** `path`, `options.cwd`, `paths[]` (each element of an array). */
  readonly target: string;
}

export type ToolMap = Readonly<Record<string, readonly ToolEventSpec[]>>;

const write = (target: string): ToolEventSpec => ({ kind: 'write', target });
const read = (target: string): ToolEventSpec => ({ kind: 'read', target });

/** The tools of @modelcontextprotocol/server-filesystem and the paths they act on. */
export const FILESYSTEM_TOOLS: ToolMap = {
  write_file: [write('path')],
  edit_file: [write('path')],
  create_directory: [write('path')],
  move_file: [write('source'), write('destination')],
  read_file: [read('path')],
  read_text_file: [read('path')],
  read_media_file: [read('path')],
  read_multiple_files: [read('paths[]')],
  list_directory: [read('path')],
  list_directory_with_sizes: [read('path')],
  directory_tree: [read('path')],
  search_files: [read('path')],
  get_file_info: [read('path')],
  list_allowed_directories: [],
};

/** The built-in mapping with the configuration's entries over it. */
export function toolMap(
  configured: Readonly<Record<string, ToolEventSpec | readonly ToolEventSpec[]>>,
): ToolMap {
  const map: Record<string, readonly ToolEventSpec[]> = Object.assign(
    Object.create(null),
    FILESYSTEM_TOOLS,
  );
  for (const [name, spec] of Object.entries(configured)) map[name] = [spec].flat();
  return map;
}

/**
 * The events a tool call makes, or null for a tool the map does not know. A mapped target
 * that is missing or not a string is an error (E_EVENT_INVALID) naming the argument: a call
 * whose target cannot be read cannot be judged, so it is refused.
 */
export function toolEvents(
  map: ToolMap,
  name: string,
  args: Record<string, unknown>,
): EventInput[] | null {
  // Own keys only: a tool named `constructor` or `__proto__` is unmapped, not Object's.
  if (!Object.hasOwn(map, name)) return null;
  const specs = map[name] as readonly ToolEventSpec[];
  const events: EventInput[] = [];
  for (const spec of specs) {
    for (const target of argumentValues(args, spec.target, name))
      events.push({ kind: spec.kind, target });
  }
  return events;
}

function argumentValues(args: Record<string, unknown>, path: string, tool: string): string[] {
  let values: unknown[] = [args];
  for (const part of path.split('.')) {
    const each = part.endsWith('[]');
    const key = each ? part.slice(0, -2) : part;
    const next: unknown[] = [];
    for (const v of values) {
      const child =
        typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[key] : undefined;
      if (!each) next.push(child);
      else if (Array.isArray(child)) next.push(...child);
      else throw badArgument(tool, path, child, 'an array');
    }
    values = next;
  }
  return values.map((v) => {
    if (typeof v !== 'string' || v === '') throw badArgument(tool, path, v, 'a non-empty string');
    return v;
  });
}

function badArgument(tool: string, path: string, got: unknown, expected: string): TrajgateError {
  return new TrajgateError(
    'E_EVENT_INVALID',
    `tool ${tool}: argument "${path}" must be ${expected}, got ${describe(got)}`,
  );
}
