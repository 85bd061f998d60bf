import { readdirSync, statSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { errnoCode } from '../errors.js';
import { osError } from '../os-error.js';

/**
 * A journal's files: `<path>` is the live one; each rotation renames it `<stem>.NNNNNN<ext>`
 * (numbers increase, zero-padded to 6), so sorting by number is oldest first.
 */
export interface Rotated {
  readonly n: number;
  readonly path: string;
}

const parts = (path: string) => {
  const ext = extname(path);
  return { dir: dirname(path), stem: basename(path, ext), ext };
};

/** The name rotation `n` of `path` gets. */
export function rotatedName(path: string, n: number): string {
  const { dir, stem, ext } = parts(path);
  return join(dir, `${stem}.${String(n).padStart(6, '0')}${ext}`);
}

/** The rotated files of `path` present now, oldest first. */
export function listRotated(path: string): Rotated[] {
  const { dir, stem, ext } = parts(path);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return [];
    throw osError('E_INPUT_READ', err, { op: 'list', what: "the journal's folder", path: dir });
  }
  const out: Rotated[] = [];
  for (const name of names) {
    if (!name.startsWith(`${stem}.`) || !name.endsWith(ext)) continue;
    const digits = name.slice(stem.length + 1, name.length - ext.length);
    if (/^\d{6,}$/.test(digits)) out.push({ n: Number(digits), path: join(dir, name) });
  }
  return out.sort((a, b) => a.n - b.n);
}

/** Every file of the journal, oldest first: the rotated ones, then the live one if present. */
export function journalFiles(path: string): string[] {
  const files = listRotated(path).map((r) => r.path);
  if (sizeOf(path) >= 0) files.push(path);
  return files;
}

/** A file's size, or -1 when it does not exist. */
export function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return -1;
    throw osError('E_INPUT_READ', err, { op: 'read', what: 'the journal', path });
  }
}

/** One file of the journal and where it starts in the journal's one offset space. */
export interface Segment {
  readonly path: string;
  readonly base: number;
}

/**
 * The journal's files as one stream of bytes: the session index keeps offsets in it, so an
 * event's line is found whichever file holds it now. Bases are given once (the live file's is
 * the sum of the rotated files' sizes at start) and never move; a deleted file's offsets are
 * simply gone. The writer keeps the one registered for its path up to date.
 */
export class Segments {
  #list: Segment[];

  constructor(list: Segment[]) {
    this.#list = list;
  }

  /** From the files on disk now: rotated ones from offset 0, then the live one. */
  static scan(path: string): Segments {
    const list: Segment[] = [];
    let base = 0;
    for (const r of listRotated(path)) {
      list.push({ path: r.path, base });
      base += Math.max(0, sizeOf(r.path));
    }
    list.push({ path, base });
    return new Segments(list);
  }

  get list(): readonly Segment[] {
    return this.#list;
  }

  /** Where the oldest file still present starts. */
  get start(): number {
    return this.#list[0]?.base ?? 0;
  }

  get live(): Segment {
    return this.#list[this.#list.length - 1] as Segment;
  }

  /** The live file was renamed `rotated`; a new live file starts at `base`. */
  rotated(rotated: string, base: number): void {
    const live = this.live;
    this.#list = [
      ...this.#list.slice(0, -1),
      { path: rotated, base: live.base },
      { path: live.path, base },
    ];
  }

  /** The rotated file was deleted (keep). */
  deleted(path: string): void {
    this.#list = this.#list.filter((s) => s.path !== path);
  }

  /** The file holding offset `at`, and the next file's base (Infinity for the live one). */
  find(at: number): { segment: Segment; end: number } | null {
    for (let i = this.#list.length - 1; i >= 0; i--) {
      const segment = this.#list[i] as Segment;
      if (at >= segment.base) return { segment, end: this.#list[i + 1]?.base ?? Infinity };
    }
    return null;
  }
}

const registry = new Map<string, Segments>();

/** The journal's segments as its writer keeps them, else as the files on disk are now. */
export function segmentsOf(path: string): Segments {
  return registry.get(path) ?? Segments.scan(path);
}

/** The writer of `path` registers its segments (one writer per journal per process). */
export function registerSegments(path: string, segments: Segments): void {
  registry.set(path, segments);
}
