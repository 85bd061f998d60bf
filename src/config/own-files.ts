import type { BigIntStats } from 'node:fs';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileIdentity, isInside, physicalPath } from '../event/paths.js';
import { CA_CERT, CA_KEY } from '../tls/ca.js';
import type { Config } from './load.js';
import { EMBEDDED_DEFAULT } from './load.js';
import type { KeyPath, Problem } from './problems.js';
import { Locator, Problems } from './problems.js';

/** One of trajgate's own paths (a real path) and what it is, for reasons and errors. */
export interface OwnPath {
  readonly path: string;
  /** `the journal's folder`, `the config file`, `the CA key`. */
  readonly what: string;
}

/**
 * trajgate's own files as the guard compares them (guard/protected.ts): plain data. An agent
 * that could read the admin token could resume its own pause; one that could rewrite the
 * journal could erase it.
 */
export interface ProtectedFiles {
  /** Folders wholly trajgate's, everything inside them included: the journal's folder. */
  readonly folders: readonly OwnPath[];
  /** Single files: the config file, the CA's certificate and key. */
  readonly files: readonly OwnPath[];
  /** `device:inode` of every protected file → its path: a hard link is the same file. */
  readonly inodes: ReadonlyMap<string, string>;
}

/** A data path with the config key that places it. */
export interface DataPath extends OwnPath {
  readonly key: string;
  /** The key as a path into the YAML document. */
  readonly at: KeyPath;
  readonly folder: boolean;
}

/** What places trajgate's own files: its journal's folder, its CA, the config file itself. */
export interface OwnFilesConfig {
  readonly source: string;
  readonly journal: Pick<Config['journal'], 'path'>;
  readonly tls: Pick<Config['tls'], 'ca'>;
}

/**
 * What trajgate writes, by key: the journal's folder (the journal, its rotated files and
 * snapshots, admin-token, link-key, captures/) and the CA's files. Real paths, so that a link
 * to one is compared as the file itself.
 */
export function dataPaths(config: OwnFilesConfig): DataPath[] {
  const ca = (name: string, what: string): DataPath => {
    const path = real(join(config.tls.ca, name));
    return { key: 'tls.ca', at: ['tls', 'ca'], what, path, folder: false };
  };
  return [
    {
      key: 'journal.path',
      at: ['journal', 'path'],
      what: "the journal's folder",
      path: real(dirname(config.journal.path)),
      folder: true,
    },
    ca(CA_CERT, 'the CA certificate'),
    ca(CA_KEY, 'the CA key'),
  ];
}

const OVERLAP = "trajgate's data and a workspace overlap";

/**
 * The config's data paths that sit inside a workspace, or a workspace inside the journal's
 * folder, each naming both paths and both keys. `start`, `check-config` and a reload refuse
 * such a config: the agent's own files and trajgate's must not overlap.
 */
export function dataInWorkspaces(config: Config): Problem[] {
  const spaces: [string, KeyPath, string][] = [['workspace', ['workspace'], config.workspace]];
  config.agents?.forEach((a, i) => {
    if (a.workspace !== config.workspace)
      spaces.push([`agents[${i}].workspace`, ['agents', i, 'workspace'], a.workspace]);
  });
  const problems: Problem[] = [];
  for (const d of dataPaths(config)) {
    for (const [key, at, ws] of spaces) {
      if (isInside(d.path, ws))
        problems.push({
          path: d.at,
          reads: [at],
          kind: OVERLAP,
          text: `${d.key}: ${d.what} ${d.path} is inside the workspace ${ws} (${key}), where the agent could read or rewrite it: move one of them`,
        });
      else if (d.folder && isInside(ws, d.path))
        problems.push({
          path: at,
          reads: [d.at],
          kind: OVERLAP,
          text: `${key}: the workspace ${ws} is inside ${d.what} ${d.path} (${d.key}), which is never the agent's: move one of them`,
        });
    }
  }
  return problems;
}

/** Throws E_CONFIG_INVALID naming every overlap dataInWorkspaces finds. */
export function refuseDataInWorkspaces(config: Config): void {
  const problems = new Problems(new Locator(config.source));
  for (const p of dataInWorkspaces(config)) problems.add(p);
  problems.throwIfAny();
}

/**
 * The protected set compiled from a config, with the identities of the files in it. Those
 * change as trajgate writes (a rotation makes a new journal file): `refresh` reads them again
 * when a folder or file changed since, and costs a stat of each otherwise. The gateway calls
 * it before judging an event that names a file with hard links, the only ones it matters for.
 */
export class OwnFiles implements ProtectedFiles {
  readonly folders: readonly OwnPath[];
  readonly files: readonly OwnPath[];
  #inodes: ReadonlyMap<string, string> = new Map();
  /** The folders walked last time, subfolders included; how they and the files were then. */
  #seen: readonly string[] = [];
  #stamp = '';

  constructor(config: OwnFilesConfig) {
    const data = dataPaths(config);
    const own = ({ path, what }: OwnPath): OwnPath => ({ path, what });
    this.folders = data.filter((d) => d.folder).map(own);
    const files = data.filter((d) => !d.folder).map(own);
    if (config.source !== EMBEDDED_DEFAULT)
      files.push({ path: real(config.source), what: 'the config file' });
    this.files = files;
    this.refresh();
  }

  get inodes(): ReadonlyMap<string, string> {
    return this.#inodes;
  }

  /** Reads the identities again if anything protected changed since the last time. */
  refresh(): void {
    if (this.#stamp !== '' && this.#stampNow() === this.#stamp) return;
    const inodes = new Map<string, string>();
    const seen: string[] = [];
    for (const f of this.files) {
      const st = stat(f.path);
      if (st?.isFile()) inodes.set(fileIdentity(st), f.path);
    }
    for (const d of this.folders) walk(d.path, inodes, seen);
    this.#inodes = inodes;
    this.#seen = seen;
    this.#stamp = this.#stampNow();
  }

  /** An entry added, removed or renamed changes its folder's mtime; a file replaced, its inode. */
  #stampNow(): string {
    const parts: string[] = [];
    for (const path of new Set([...this.folders.map((d) => d.path), ...this.#seen])) {
      const st = stat(path);
      parts.push(st ? `${fileIdentity(st)}@${st.mtimeNs}` : '-');
    }
    for (const f of this.files) {
      const st = stat(f.path);
      parts.push(st ? fileIdentity(st) : '-');
    }
    return parts.join(' ');
  }
}

/** Every regular file under `dir` by identity; links inside are not followed. */
function walk(dir: string, inodes: Map<string, string>, seen: string[]): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return; // not there yet (the journal opens later), or unreadable: nothing to compare
  }
  seen.push(dir);
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) walk(path, inodes, seen);
    else if (e.isFile()) {
      const st = stat(path);
      if (st?.isFile()) inodes.set(fileIdentity(st), path);
    }
  }
}

function stat(path: string): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** The real path, through the links that exist; the lexical one when it cannot be resolved. */
function real(path: string): string {
  const abs = resolve(path);
  return physicalPath(abs, '/') ?? abs;
}
