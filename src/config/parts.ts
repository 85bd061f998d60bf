import { isDeepStrictEqual } from 'node:util';
import type { Config } from './load.js';

type Section<T> = T extends readonly unknown[]
  ? never
  : T extends object
    ? keyof T & string
    : never;

/**
 * The keys of the config a part reads: a section's keys (`limits: ['connectTimeout']`), or a
 * top-level key whole (`agents: true`). A change is named at this grain (`limits.connectTimeout`).
 */
export type Shape = {
  readonly [K in keyof Config]?: true | readonly Section<Config[K]>[];
};

/** The part of the config a shape names, with the config's own keys and values. */
export type Slice<S extends Shape> = {
  -readonly [K in keyof S & keyof Config]: S[K] extends readonly (infer F)[]
    ? Pick<Config[K], F & keyof Config[K]>
    : Config[K];
};

/** How a part takes a changed slice; every part's is prepared first, then all are installed. */
export interface Change {
  /** What may fail (a CA to load, a PEM file to read) before anything changes. */
  prepare?(): void | Promise<void>;
  /** Takes effect: every part's in one synchronous step, so no request sees half of each. */
  install(): void;
  /** Drops what prepare built, when the reload is refused after it. */
  discard?(): void;
}

/** A part of the running gateway that holds config: what it reads, and how it takes a change. */
export interface Part<S extends Shape = Shape> {
  /** What it is, in messages. */
  readonly name: string;
  readonly reads: S;
  /**
   * Prepares its change to `next` (its slice changed). Absent: it cannot change while running
   * (open sockets, files, parsers built once): its changed keys need a restart, and keep their
   * running values for every part.
   */
  readonly configure?: (next: Slice<S>) => Change;
}

/** A part, typed by its shape (Part<S> for one part; a list of them holds Part). */
export function part<S extends Shape>(p: Part<S>): Part {
  return p as unknown as Part;
}

/** A part held for the life of the process: a change of what it reads needs a restart. */
export function fixed<S extends Shape>(name: string, reads: S): Part {
  return { name, reads };
}

/** What `shape` names of `config`. */
export function pick<S extends Shape>(config: Config, shape: S): Slice<S> {
  const slice: Record<string, unknown> = {};
  for (const [key, fields] of Object.entries(shape)) {
    const value = config[key as keyof Config];
    slice[key] =
      fields === true
        ? value
        : Object.fromEntries(fields.map((f: string) => [f, (value as never)[f]]));
  }
  return slice as Slice<S>;
}

/**
 * A slice read at each use (a request, a scrape), and the part that keeps it: a reload
 * replaces its sections in place.
 */
export function live<S extends Shape>(
  name: string,
  reads: S,
  config: Config,
): { readonly value: Slice<S>; readonly part: Part } {
  const value = pick(config, reads);
  return { value, part: part({ name, reads, configure: (next) => replaced(value, next) }) };
}

/** A change that replaces a held slice's sections with `next`'s. */
export function replaced<S extends Shape>(held: Slice<S>, next: Slice<S>): Change {
  return { install: () => void Object.assign(held, next) };
}

/**
 * A change that builds what the next slice needs before anything changes (a build that throws
 * refuses the reload), then installs it; `discard` drops it when the reload is refused after.
 */
export function built<T>(
  build: () => T | Promise<T>,
  install: (made: T) => void,
  discard?: (made: T) => void,
): Change {
  let made: { readonly value: T } | null = null;
  return {
    prepare: async () => void (made = { value: await build() }),
    install: () => install((made as { readonly value: T }).value),
    discard: () => {
      if (made !== null) discard?.(made.value);
    },
  };
}

/** The keys `shape` names, as dotted names (`limits.connectTimeout`, `agents`). */
export function keyNames(shape: Shape): string[] {
  return Object.entries(shape).flatMap(([key, fields]) =>
    fields === true ? [key] : (fields as readonly string[]).map((f) => `${key}.${f}`),
  );
}

/** The value of `config` at a name keyNames gives. */
function valueAt(config: Config, name: string): unknown {
  const [key, field] = name.split('.') as [keyof Config, string | undefined];
  return field === undefined ? config[key] : (config[key] as never)[field];
}

/** The keys of `shape` whose values differ between `a` and `b`, as keyNames names them. */
export function changedKeys(shape: Shape, a: Config, b: Config): string[] {
  return keyNames(shape).filter((name) => !isDeepStrictEqual(valueAt(a, name), valueAt(b, name)));
}

/** `next` with the named keys (as keyNames names them) at their values in `running`. */
export function keeping(next: Config, running: Config, keys: Iterable<string>): Config {
  const kept: Record<string, unknown> = { ...next };
  for (const name of keys) {
    const [key, field] = name.split('.') as [keyof Config, string | undefined];
    kept[key] =
      field === undefined
        ? valueAt(running, name)
        : { ...(kept[key] as object), [field]: valueAt(running, name) };
  }
  return kept as unknown as Config;
}
