import { isDeepStrictEqual } from 'node:util';
import type { Config } from '../config/load.js';
import type { Change, Part } from '../config/parts.js';
import { changedKeys, keeping, keyNames, pick } from '../config/parts.js';
import { knownKinds } from '../config/schema.js';

/** What a reload to a loaded config would do, worked out before anything changes. */
export interface ReloadPlan {
  /** The config the gateway runs on after it: the loaded one, restart-needed keys kept. */
  readonly next: Config;
  /** Keys whose new values only a restart applies (a part that holds them cannot change). */
  readonly restartNeeded: readonly string[];
  /** The parts whose slice changes, with it. */
  readonly changes: readonly (readonly [Part, unknown])[];
}

/** A reload's changes, prepared: installed together, or dropped. */
export interface Prepared {
  install(): void;
  discard(): void;
}

/** One part as it runs: what it reads, the slice it runs on, whether it can change. */
export interface RunningPart {
  readonly name: string;
  readonly reads: Part['reads'];
  readonly slice: unknown;
  readonly live: boolean;
}

/**
 * The gateway's parts that hold config, and the config they run on. Each part names the keys it
 * reads (config/parts.ts); a reload changes the parts whose slice changed, and what needs a
 * restart is derived from the parts that cannot change — never kept by hand. A key held by
 * such a part keeps its running value for every part, so no two parts run on different values.
 */
export class ConfigParts {
  readonly #parts: Part[] = [];
  readonly #slices = new Map<Part, unknown>();
  #running: Config;

  constructor(initial: Config) {
    this.#running = initial;
  }

  /** The config as it runs. */
  get running(): Config {
    return this.#running;
  }

  /** Adds parts opened on the running config. */
  add(...parts: Part[]): void {
    for (const p of parts) {
      this.#parts.push(p);
      this.#slices.set(p, pick(this.#running, p.reads));
    }
  }

  /** Every part with the slice it runs on (for tests and the docs' list). */
  list(): RunningPart[] {
    return this.#parts.map((p) => ({
      name: p.name,
      reads: p.reads,
      slice: this.#slices.get(p),
      live: p.configure !== undefined,
    }));
  }

  /**
   * Every key a reload cannot apply: those the parts that cannot change read, whatever their
   * values (docs/configuration.md lists them; `node scripts/reload-keys.mjs` prints them).
   */
  restartKeys(): string[] {
    return [...new Set(this.#fixed().flatMap((p) => keyNames(p.reads)))];
  }

  /** What running on `loaded` would change; pure (a reload's checks run it too). */
  plan(loaded: Config): ReloadPlan {
    const restart = new Set(
      this.#fixed().flatMap((p) => changedKeys(p.reads, this.#running, loaded)),
    );
    const kept = keeping(loaded, this.#running, restart);
    // `kinds` is worked out from keys that may have been kept (bridge.tools, bridge.routes).
    const next = { ...kept, kinds: knownKinds(kept) };
    const changes = this.#parts.flatMap((p) => {
      if (p.configure === undefined) return [];
      const slice = pick(next, p.reads);
      return isDeepStrictEqual(slice, this.#slices.get(p)) ? [] : [[p, slice] as const];
    });
    return { next, restartNeeded: [...restart], changes };
  }

  /** The parts that cannot change while running: a change of what they read needs a restart. */
  #fixed(): Part[] {
    return this.#parts.filter((p) => p.configure === undefined);
  }

  /**
   * Prepares every change of `plan` (a part's CA to load, its PEM files to read); one that
   * fails drops the others' and throws, nothing changed.
   */
  async prepare(plan: ReloadPlan): Promise<Prepared> {
    const done: Change[] = [];
    const discard = () => {
      for (const change of done) change.discard?.();
    };
    try {
      for (const [p, slice] of plan.changes) {
        const change = (p.configure as (next: unknown) => Change)(slice);
        done.push(change);
        await change.prepare?.();
      }
    } catch (err) {
      discard();
      throw err;
    }
    return {
      install: () => {
        for (const change of done) change.install();
        for (const [p, slice] of plan.changes) this.#slices.set(p, slice);
        this.#running = plan.next;
      },
      discard,
    };
  }
}
