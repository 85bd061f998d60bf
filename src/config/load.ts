import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Document } from 'yaml';
import { errnoCode, TrajgateError } from '../errors.js';
import { physicalPath } from '../event/paths.js';
import { expandEnv } from './env.js';
import { branchIssues, formatIssue, keyPath } from './issues.js';
import type { RawJournal } from './journal-schema.js';
import { DEFAULT_JOURNAL } from './journal-schema.js';
import type { HostPort } from './formats.js';
import { parseHostPort } from './formats.js';
import type { RawConfig } from './schema.js';
import { configSchema, knownKinds } from './schema.js';

export interface Agent {
  readonly id: string;
  readonly token: string;
  /** Real path of the agent's workspace (the default workspace when not given). */
  readonly workspace: string;
  /** Network patterns allowed for this agent only (besides network.allow). */
  readonly allow: readonly string[];
  /** Roles whose `allow` lists this agent shares. */
  readonly roles: readonly string[];
}

/** A validated configuration with paths made absolute and durations in milliseconds. */
export interface Config extends Omit<
  RawConfig,
  'workspace' | 'agents' | 'listen' | 'journal' | 'tls'
> {
  /** The file it came from, or "(embedded default)". */
  readonly source: string;
  readonly workspace: string;
  readonly journal: RawJournal;
  readonly tls: RawConfig['tls'] & { readonly ca: string };
  readonly agents: readonly Agent[] | null;
  readonly listen: {
    readonly proxy: HostPort;
    readonly bridge: HostPort;
    readonly admin: HostPort;
  };
  readonly kinds: ReadonlySet<string>;
}

export const EMBEDDED_DEFAULT = '(embedded default)';

/**
 * An unset `${VAR}` (without a default) at a key: what `start` reports as an error. A caller
 * of parseConfig may let some stand in (config/operator-config.ts).
 */
export interface UnsetVar {
  readonly path: readonly PropertyKey[];
  readonly name: string;
  /** The value as written in the file, before expansion. */
  readonly written: string;
  /** `file:line:col key: environment variable VAR is not set`. */
  readonly error: string;
}

/** Text to stand in for an unset variable, or undefined: it is an error. */
export type StandIn = (unset: UnsetVar) => string | undefined;

/** Reads, expands, validates and resolves a config file. Throws TrajgateError (E_CONFIG_*). */
export function loadConfigFile(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  standIn?: StandIn,
): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const why = errnoCode(err) === 'ENOENT' ? 'no such file' : (err as Error).message;
    throw new TrajgateError('E_CONFIG_READ', `${file}: cannot read config: ${why}`);
  }
  return parseConfig(text, file, dirname(resolve(file)), env, standIn);
}

/**
 * The embedded default: every key at its default, the current directory as workspace and
 * trajgate's data in its data folder (dataHome), never in the workspace.
 */
export function defaultConfig(
  cwd: string = process.cwd(),
  env: NodeJS.ProcessEnv = process.env,
): Config {
  return validate({ version: 1 }, EMBEDDED_DEFAULT, cwd, env, undefined);
}

/**
 * trajgate's data folder, where the journal (with admin-token, link-key, captures/ and certs/
 * beside it) goes when `journal.path` is not given: `$TRAJGATE_DATA` (the Dockerfile sets it
 * to its data volume), else `$XDG_STATE_HOME/trajgate`, else `~/.local/state/trajgate`. Never
 * the current folder: that is the agent's workspace by default.
 */
export function dataHome(baseDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.TRAJGATE_DATA) return resolve(baseDir, env.TRAJGATE_DATA);
  // The XDG spec: a relative value is invalid and ignored.
  const state = env.XDG_STATE_HOME;
  if (state && isAbsolute(state)) return join(state, 'trajgate');
  return join(env.HOME || homedir(), '.local', 'state', 'trajgate');
}

/**
 * The journal's path: a relative one resolves against `TRAJGATE_DATA` when set (so the journal
 * lands on the container's volume whatever the config says), else the config's folder.
 */
function journalPath(given: string | undefined, baseDir: string, env: NodeJS.ProcessEnv): string {
  if (given === undefined) return join(dataHome(baseDir, env), DEFAULT_JOURNAL);
  return resolve(env.TRAJGATE_DATA ? resolve(baseDir, env.TRAJGATE_DATA) : baseDir, given);
}

/**
 * The configured workspaces that are not existing folders, as `key: path` lines. Checked at
 * start (and by check-config), not on every load: offline replays judge paths that need not exist.
 */
export function missingWorkspaces(config: Config): string[] {
  const named: [string, string][] = [['workspace', config.workspace]];
  config.agents?.forEach((a, i) => named.push([`agents[${i}].workspace`, a.workspace]));
  const problems = new Map<string, string>();
  for (const [key, dir] of named) {
    if (problems.has(dir)) continue;
    let why = `is not a folder (change ${key})`;
    try {
      if (statSync(dir).isDirectory()) continue;
    } catch {
      why = `does not exist (create it, or change ${key})`;
    }
    problems.set(dir, `${key}: ${dir} ${why}`);
  }
  return [...problems.values()];
}

export function parseConfig(
  text: string,
  source: string,
  baseDir: string,
  env: NodeJS.ProcessEnv = process.env,
  standIn?: StandIn,
): Config {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const details = doc.errors.map((e) => {
      const pos = lines.linePos(e.pos[0]);
      return `${source}:${pos.line}:${pos.col}: ${e.message.split('\n')[0]}`;
    });
    throw new TrajgateError('E_CONFIG_YAML', `${source}: not valid YAML`, details);
  }
  const value: unknown = doc.toJS();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TrajgateError(
      'E_CONFIG_YAML',
      `${source}: expected a YAML mapping of keys (version: 1, …) at the top`,
    );
  }
  const missing: (readonly PropertyKey[])[] = [];
  const envErrors: string[] = [];
  const expanded = expandEnv(value, env, (path, name) => {
    const error = `${where(source, doc, lines, path)}${keyPath(path)}: environment variable ${name} is not set`;
    const written = String(path.reduce<unknown>((node, key) => (node as never)[key], value));
    const text = standIn?.({ path, name, written, error });
    if (text !== undefined) return text;
    missing.push(path);
    envErrors.push(error);
  });
  return validate(expanded, source, baseDir, env, {
    doc,
    lines,
    envErrors,
    missing,
  });
}

function validate(
  value: unknown,
  source: string,
  baseDir: string,
  env: NodeJS.ProcessEnv,
  yaml: YamlSource | undefined,
): Config {
  const result = configSchema.safeParse(value, { reportInput: true });
  const details = [...(yaml?.envErrors ?? [])];
  for (const issue of branchIssues(result.error?.issues ?? [])) {
    // A value emptied by a missing variable is already explained by that error.
    if (yaml?.missing.some((p) => keyPath(p) === keyPath(issue.path))) continue;
    const at = (path: readonly PropertyKey[]) =>
      yaml ? where(source, yaml.doc, yaml.lines, path) : '';
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        details.push(
          `${at([...issue.path, key])}${keyPath([...issue.path, key], value)}: unknown key`,
        );
    } else {
      details.push(`${at(issue.path)}${formatIssue(issue, value)}`);
    }
  }
  if (details.length > 0 || !result.success) {
    throw new TrajgateError('E_CONFIG_INVALID', `${source}: ${details.length} error(s)`, details);
  }
  const raw = withToolBoundary(result.data);
  const workspace = realDir(raw.workspace ?? '.', baseDir);
  const listen = {
    proxy: parseHostPort(raw.listen.proxy) as HostPort,
    bridge: parseHostPort(raw.listen.bridge) as HostPort,
    admin: parseHostPort(raw.listen.admin) as HostPort,
  };
  const journal = journalPath(raw.journal.path, baseDir, env);
  return {
    ...raw,
    source,
    workspace,
    journal: { ...raw.journal, path: journal },
    listen,
    agents:
      raw.agents?.map((a) => ({
        ...a,
        workspace: a.workspace ? realDir(a.workspace, baseDir) : workspace,
      })) ?? null,
    tls: {
      ...raw.tls,
      ca: raw.tls.ca === undefined ? join(dirname(journal), 'certs') : resolve(baseDir, raw.tls.ca),
      upstreamCa: raw.tls.upstreamCa.map((f) => resolve(baseDir, f)),
    },
    kinds: knownKinds(raw),
  };
}

/**
 * Tool calls the bridge cannot map are `tool` events; `bridge.unmapped` sets how they count,
 * as a boundary of their own, unless the policy declares a `tool` boundary itself.
 */
function withToolBoundary(raw: RawConfig): RawConfig {
  if (raw.policy.boundaries.tool !== undefined || raw.bridge.unmapped === 'allow') return raw;
  const tool =
    raw.bridge.unmapped === 'pause'
      ? { kinds: ['tool'], pauseAt: 1 }
      : { kinds: ['tool'], reviewAt: 1, pauseAt: 2 };
  return { ...raw, policy: { ...raw.policy, boundaries: { ...raw.policy.boundaries, tool } } };
}

interface YamlSource {
  readonly doc: Document;
  readonly lines: LineCounter;
  readonly envErrors: readonly string[];
  readonly missing: readonly (readonly PropertyKey[])[];
}

/** Workspaces are compared by real path, so a symlinked workspace still contains its files. */
function realDir(dir: string, baseDir: string): string {
  return physicalPath(resolve(baseDir, dir), '/') ?? resolve(baseDir, dir);
}

/**
 * `file:line:col ` of the deepest key on the path that exists in the YAML document: the key
 * itself for a mapping entry, the item for a list index.
 */
function where(
  source: string,
  doc: Document,
  lines: LineCounter,
  path: readonly PropertyKey[],
): string {
  for (let n = path.length; n > 0; n--) {
    const parent = doc.getIn(path.slice(0, n - 1) as unknown[], true);
    const last = path[n - 1];
    const node = isMap(parent)
      ? parent.items.find((pair) => isScalar(pair.key) && pair.key.value === last)?.key
      : isSeq(parent)
        ? parent.items[last as number]
        : undefined;
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (range) {
      const pos = lines.linePos(range[0]);
      return `${source}:${pos.line}:${pos.col}: `;
    }
  }
  return `${source}: `;
}
