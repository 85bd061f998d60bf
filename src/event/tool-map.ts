import { TrajgateError } from '../errors.js';
import { describeValue } from './validate.js';

/** One event a tool call makes: its kind, and the argument path that holds its target. */
export interface ToolEventSpec {
  readonly kind: string;
  /** `path`, `options.cwd`, `paths[]` (each element of an array). */
  readonly target: string;
  /** A read whose answer can carry anything under its target (PathSubject.tree). */
  readonly tree?: true;
  /**
   * Kind `command`: the argument path holding the command line it runs (`command`,
   * `options.argv`), a string or an array of strings (shown shell-quoted).
   */
  readonly command?: string;
}

export type ToolMap = Readonly<Record<string, readonly ToolEventSpec[]>>;

const write = (target: string): ToolEventSpec => ({ kind: 'write', target });
const read = (target: string): ToolEventSpec => ({ kind: 'read', target });
const tree = (target: string): ToolEventSpec => ({ kind: 'read', target, tree: true });

/**
 * The tools of @modelcontextprotocol/server-filesystem and the paths they act on, by what
 * their answer can carry as well as what they change: `edit_file` answers a diff of the file
 * (with `dryRun` too), `move_file` puts its source's content where the agent may read it under
 * another name, listings and searches name what is under their folder.
 */
export const FILESYSTEM_TOOLS: ToolMap = {
  write_file: [write('path')],
  edit_file: [read('path'), write('path')],
  create_directory: [write('path')],
  move_file: [read('source'), write('source'), write('destination')],
  read_file: [read('path')],
  read_text_file: [read('path')],
  read_media_file: [read('path')],
  read_multiple_files: [read('paths[]')],
  list_directory: [tree('path')],
  list_directory_with_sizes: [tree('path')],
  directory_tree: [tree('path')],
  search_files: [tree('path')],
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

/** One target a tool call names: its event, and where in the arguments its value sits. */
export interface ToolTarget {
  readonly kind: string;
  readonly target: string;
  readonly tree?: true;
  /** The command line the call runs (ToolEventSpec.command), as given. */
  readonly command?: string;
  /** Replaces the value in the call's arguments (to forward the path judged). */
  set(value: string): void;
}

/**
 * The targets of a tool call, or null for a tool the map does not know. A mapped target that
 * is missing or not a string is an error (E_EVENT_INVALID) naming the argument: a call whose
 * target cannot be read cannot be judged, so it is refused.
 */
export function toolTargets(
  map: ToolMap,
  name: string,
  args: Record<string, unknown>,
): ToolTarget[] | null {
  // Own keys only: a tool named `constructor` or `__proto__` is unmapped, not Object's.
  if (!Object.hasOwn(map, name)) return null;
  const specs = map[name] as readonly ToolEventSpec[];
  return specs.flatMap((spec) => {
    const line = spec.command === undefined ? null : commandLine(args, spec.command, name);
    const command = line === null ? {} : { command: line };
    return argumentSlots(args, spec.target, name).map(({ value, set }) =>
      spec.tree === true
        ? { kind: spec.kind, target: value, tree: true as const, set }
        : { kind: spec.kind, target: value, ...command, set },
    );
  });
}

/**
 * The command line at an argument path: a string, or an array of strings (an argv) written as
 * a shell would read it back; null when the call leaves it out. Any other value is an error
 * naming the argument: what the tool runs could not be shown.
 */
export function commandLine(args: unknown, path: string, tool: string): string | null {
  let value = args;
  for (const key of path.split('.'))
    value =
      typeof value === 'object' && value !== null && Object.hasOwn(value, key)
        ? (value as Record<string, unknown>)[key]
        : undefined;
  if (value === undefined || value === null || value === '') return null;
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string'))
    return value.map(shellQuote).join(' ');
  throw badArgument(tool, path, value, 'a command line (a string or an array of strings)');
}

/** A word as a POSIX shell reads it back: bare when nothing in it is special, else in `'…'`. */
function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

interface Slot {
  readonly value: string;
  set(value: string): void;
}

function argumentSlots(args: Record<string, unknown>, path: string, tool: string): Slot[] {
  // Each value with the object or array holding it and its key there.
  let found: { value: unknown; holder: object; key: string | number }[] = [
    { value: args, holder: {}, key: '' },
  ];
  for (const part of path.split('.')) {
    const each = part.endsWith('[]');
    const key = each ? part.slice(0, -2) : part;
    const next: typeof found = [];
    for (const { value: v } of found) {
      const holder = typeof v === 'object' && v !== null ? v : {};
      const child: unknown = Object.hasOwn(holder, key)
        ? (holder as Record<string, unknown>)[key]
        : undefined;
      if (!each) next.push({ value: child, holder, key });
      else if (Array.isArray(child))
        next.push(...child.map((value: unknown, i) => ({ value, holder: child, key: i })));
      else throw badArgument(tool, path, child, 'an array');
    }
    found = next;
  }
  return found.map(({ value, holder, key }) => {
    if (typeof value !== 'string' || value === '')
      throw badArgument(tool, path, value, 'a non-empty string');
    // Defined, not assigned: an own `__proto__` key would otherwise hit Object's setter.
    const set = (v: string) =>
      void Object.defineProperty(holder, key, { value: v, enumerable: true, writable: true });
    return { value, set };
  });
}

function badArgument(tool: string, path: string, got: unknown, expected: string): TrajgateError {
  return new TrajgateError(
    'E_EVENT_INVALID',
    `tool ${tool}: argument "${path}" must be ${expected}, got ${describeValue(got)}`,
  );
}
