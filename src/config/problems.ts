import type { Document, LineCounter } from 'yaml';
import { isMap, isPair, isScalar, isSeq, visit } from 'yaml';
import type { ErrorCode } from '../errors.js';
import { TrajgateError } from '../errors.js';

export type KeyPath = readonly PropertyKey[];

/** The shortest secret Problems.hide replaces (credentials-schema.ts refuses shorter values). */
export const MIN_SECRET = 8;

/**
 * One thing wrong with a config: the key it is placed at (its line in the file) and the text
 * after `file:line:col: `, which starts with the key (`listen.bridge: …`).
 */
export interface Problem {
  readonly path: KeyPath;
  readonly text: string;
  /** What a list of problems of this kind alone is headed with (`no such workspace`). */
  readonly kind?: string;
  /** The other keys it was worked out from: it is dropped when one of them was invalid. */
  readonly reads?: readonly KeyPath[];
  /** E_CONFIG_INVALID unless said. */
  readonly code?: ErrorCode;
  /** Its place when that is no key's (a YAML error's). */
  readonly at?: Position;
}

export interface Position {
  readonly line: number;
  readonly col: number;
}

/** Whether `path` is `base` or under it. */
export function within(path: KeyPath, base: KeyPath): boolean {
  return base.length <= path.length && base.every((part, i) => path[i] === part);
}

/** Where keys are in the YAML file: none for the embedded default. */
export class Locator {
  constructor(
    readonly source: string,
    private readonly yaml?: { readonly doc: Document; readonly lines: LineCounter },
  ) {}

  /**
   * Line and column of the deepest key on the path that exists in the document: the key
   * itself for a mapping entry, the item for a list index. Null when none is in the file.
   */
  position(path: KeyPath): Position | null {
    if (!this.yaml) return null;
    const { doc, lines } = this.yaml;
    for (let n = path.length; n > 0; n--) {
      const parent = doc.getIn(path.slice(0, n - 1) as unknown[], true);
      const last = path[n - 1];
      const node = isMap(parent)
        ? parent.items.find((pair) => isScalar(pair.key) && pair.key.value === last)?.key
        : isSeq(parent)
          ? parent.items[last as number]
          : undefined;
      const range = (node as { range?: [number, number, number] } | undefined)?.range;
      if (range) return lines.linePos(range[0]);
    }
    return null;
  }

  /** The key path of the mapping key that starts at `offset` (a YAML error's), or null. */
  keyAt(offset: number): KeyPath | null {
    let found: KeyPath | null = null;
    if (this.yaml)
      visit(this.yaml.doc, {
        Pair(_, pair, ancestors) {
          if (!isScalar(pair.key) || pair.key.range?.[0] !== offset) return undefined;
          const nodes = [...ancestors, pair];
          found = nodes.flatMap((n, i) =>
            isPair(n) && isScalar(n.key)
              ? [n.key.value as PropertyKey]
              : isSeq(n)
                ? [n.items.indexOf(nodes[i + 1] as never)]
                : [],
          );
          return visit.BREAK;
        },
      });
    return found;
  }

  /** `file:line:col: `, `file: ` for a key not in the file, nothing for the embedded default. */
  prefix(path: KeyPath, pos: Position | null = this.position(path)): string {
    if (!this.yaml) return '';
    return pos ? `${this.source}:${pos.line}:${pos.col}: ` : `${this.source}: `;
  }

  /** `file:line` of a key, or `its default` when the file does not set it. */
  line(path: KeyPath): string {
    const pos = this.yaml?.doc.hasIn(path as unknown[]) ? this.position(path) : null;
    return pos ? `${this.source}:${pos.line}` : 'its default';
  }
}

/**
 * Every problem found with a config, printed at once sorted by line (one about a key the file
 * does not set, at its default, last), so fixing one never just uncovers the next.
 */
export class Problems {
  readonly #found: { problem: Problem; pos: Position | null }[] = [];
  readonly #hidden = new Set<string>();

  constructor(readonly at: Locator) {}

  get size(): number {
    return this.#found.length;
  }

  /**
   * Secrets no line may quote (credentials' values), whichever check wrote it: each is shown
   * as `[hidden]`. Shorter than MIN_SECRET is refused by its own key, and never replaced.
   */
  hide(secrets: Iterable<string>): void {
    for (const s of secrets) if (s.length >= MIN_SECRET) this.#hidden.add(s);
  }

  add(problem: Problem): void {
    this.#found.push({ problem, pos: problem.at ?? this.at.position(problem.path) });
  }

  /** Throws them all as one TrajgateError; nothing when there are none. */
  throwIfAny(): void {
    if (this.#found.length === 0) return;
    const line = (pos: Position | null) => pos?.line ?? Infinity;
    const col = (pos: Position | null) => pos?.col ?? 0;
    const sorted = this.#found
      .map((f, i) => ({ ...f, i }))
      .sort((a, b) => line(a.pos) - line(b.pos) || col(a.pos) - col(b.pos) || a.i - b.i);
    const kinds = new Set(sorted.map((f) => f.problem.kind));
    const codes = new Set(sorted.map((f) => f.problem.code ?? 'E_CONFIG_INVALID'));
    const [kind] = kinds;
    const [code] = codes;
    throw new TrajgateError(
      codes.size === 1 ? (code as ErrorCode) : 'E_CONFIG_INVALID',
      `${this.at.source}: ${kinds.size === 1 && kind !== undefined ? kind : `${sorted.length} error(s)`}`,
      sorted.map((f) =>
        this.#redacted(`${this.at.prefix(f.problem.path, f.pos)}${f.problem.text}`),
      ),
    );
  }

  #redacted(line: string): string {
    let out = line;
    for (const s of this.#hidden) out = out.split(s).join('[hidden]');
    return out;
  }
}
