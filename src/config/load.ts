import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import type { YAMLError } from 'yaml';
import { TrajgateError } from '../errors.js';
import { osError } from '../os-error.js';
import { physicalPath } from '../event/paths.js';
import { expandEnv } from './env.js';
import { formatIssue, keyPath } from './issues.js';
import type { Problem } from './problems.js';
import { Locator, Problems, within } from './problems.js';
import { validateAll } from './validate-all.js';
import type { RawJournal } from './journal-schema.js';
import { DEFAULT_JOURNAL } from './journal-schema.js';
import type { HostPort } from './formats.js';
import { parseHostPort } from './formats.js';
import type { ToolLists } from '../event/tool-policy.js';
import type { RawConfig } from './schema.js';
import { configSchema, knownKinds } from './schema.js';
import type { Credential } from './credential-values.js';
import { credentialValues } from './credential-values.js';

export interface Agent {
  readonly id: string;
  readonly token: string;
  /** Real path of the agent's workspace (the default workspace when not given). */
  readonly workspace: string;
  /** Network patterns allowed for this agent only (besides network.allow). */
  readonly allow: readonly string[];
  /** Roles whose `allow` lists (and `tools` lists) this agent shares. */
  readonly roles: readonly string[];
  /** The MCP tools it may see and call, on top of bridge.tools' and its roles' lists. */
  readonly tools: ToolLists;
}

/** A validated configuration with paths made absolute and durations in milliseconds. */
export interface Config extends Omit<
  RawConfig,
  'workspace' | 'agents' | 'listen' | 'journal' | 'tls' | 'credentials'
> {
  /** The file it came from, or "(embedded default)". */
  readonly source: string;
  readonly workspace: string;
  readonly journal: RawJournal;
  readonly tls: RawConfig['tls'] & { readonly ca: string };
  readonly agents: readonly Agent[] | null;
  /** Their values read (`valueFile` too): never to be written anywhere. */
  readonly credentials: readonly Credential[];
  readonly listen: {
    readonly proxy: HostPort;
    readonly bridge: HostPort;
    readonly admin: HostPort;
    readonly socks?: HostPort;
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

/**
 * Reads, expands, validates and resolves a config file. Throws TrajgateError (E_CONFIG_*)
 * with every problem found, sorted by line.
 */
export function loadConfigFile(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): Config {
  const text = readConfigFile(file).toString('utf8');
  return parseConfig(text, file, dirname(resolve(file)), env, options);
}

/** The config file's bytes; E_CONFIG_READ saying why and what to do when it cannot be read. */
export function readConfigFile(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw osError('E_CONFIG_READ', err, { op: 'read', what: 'the config file', path: file });
  }
}

/**
 * The embedded default: every key at its default, the current directory as workspace and
 * trajgate's data in its data folder (dataHome), never in the workspace.
 */
export function defaultConfig(
  cwd: string = process.cwd(),
  env: NodeJS.ProcessEnv = process.env,
  checks?: LoadOptions['checks'],
): Config {
  const problems = new Problems(new Locator(EMBEDDED_DEFAULT));
  return validate({ version: 1 }, cwd, env, problems, [], checks);
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

/** How a config file is read besides its schema. */
export interface LoadOptions {
  /** What stands in for an unset `${VAR}` that is no error here (operator commands). */
  readonly standIn?: StandIn;
  /**
   * What else would stop it being used (start's checks: cli/start-checks.ts), run on the config
   * with every invalid key at its default, so their problems come with the schema's at once.
   */
  readonly checks?: (config: Config, at: Locator) => Problem[];
}

export function parseConfig(
  text: string,
  source: string,
  baseDir: string,
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): Config {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const at = new Locator(source, { doc, lines });
  const problems = new Problems(at);
  const yamlError = (e: YAMLError): Problem => {
    const key = at.keyAt(e.pos[0]);
    const message = e.message.split('\n')[0] as string;
    return {
      path: key ?? [],
      at: lines.linePos(e.pos[0]),
      text: key === null ? message : `${keyPath(key)}: ${message}`,
      kind: 'not valid YAML',
      code: 'E_CONFIG_YAML',
    };
  };
  // A duplicate key leaves a document to check (its last value); broken syntax does not.
  const syntax = doc.errors.filter((e) => e.code !== 'DUPLICATE_KEY');
  if (syntax.length > 0) {
    throw new TrajgateError(
      'E_CONFIG_YAML',
      `${source}: not valid YAML (other errors are looked for once it parses)`,
      doc.errors.map((e) => {
        const { at: pos, text } = yamlError(e);
        return `${at.prefix([], pos ?? null)}${text}`;
      }),
    );
  }
  const value: unknown = doc.toJS();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TrajgateError(
      'E_CONFIG_YAML',
      `${source}: expected a YAML mapping of keys (version: 1, …) at the top`,
    );
  }
  for (const e of doc.errors) problems.add(yamlError(e));
  const missing: (readonly PropertyKey[])[] = [];
  const expanded = expandEnv(value, env, (path, name) => {
    const text = `${keyPath(path)}: environment variable ${name} is not set`;
    const written = String(path.reduce<unknown>((node, key) => (node as never)[key], value));
    const error = `${at.prefix(path)}${text}`;
    const standIn = options.standIn?.({ path, name, written, error });
    if (standIn !== undefined) return standIn;
    missing.push(path);
    problems.add({ path, text });
    // Stands in so the rest validates (its problems at this key are not reported). Long
    // enough for any token's minimum; a URL where a URL is due.
    return path[1] === 'webhook' ? 'http://unset.invalid/' : `unset-${name}-placeholder`;
  });
  return validate(expanded, baseDir, env, problems, missing, options.checks);
}

function validate(
  value: unknown,
  baseDir: string,
  env: NodeJS.ProcessEnv,
  problems: Problems,
  quiet: readonly (readonly PropertyKey[])[],
  checks: LoadOptions['checks'],
): Config {
  const source = problems.at.source;
  problems.hide(givenValues(value));
  const { data, removed } = validateAll(
    configSchema,
    value,
    (issue) => {
      if (issue.code === 'unrecognized_keys') {
        for (const key of issue.keys) {
          const path = [...issue.path, key];
          problems.add({ path, text: `${keyPath(path, value)}: unknown key` });
        }
      } else problems.add({ path: issue.path, text: formatIssue(issue, value) });
    },
    quiet,
  );
  const config =
    data === null
      ? null
      : resolveConfig(data, source, baseDir, env, (problem) => problems.add(problem));
  if (config !== null)
    problems.hide(config.credentials.flatMap((c) => [c.value, c.sigv4?.accessKeyId ?? '']));
  if (config !== null && checks !== undefined) {
    const doubtful = [...removed, ...quiet];
    const trusted = (key: readonly PropertyKey[]) => !doubtful.some((d) => within(key, d));
    for (const problem of checks(config, problems.at))
      if ([problem.path, ...(problem.reads ?? [])].every(trusted)) problems.add(problem);
  }
  problems.throwIfAny();
  return config as Config;
}

/** A valid raw config with its paths made absolute and its addresses parsed. */
function resolveConfig(
  parsed: RawConfig,
  source: string,
  baseDir: string,
  env: NodeJS.ProcessEnv,
  report: (problem: Problem) => void,
): Config {
  const raw = withToolBoundary(parsed);
  const workspace = realDir(raw.workspace ?? '.', baseDir);
  const listen = {
    proxy: parseHostPort(raw.listen.proxy) as HostPort,
    bridge: parseHostPort(raw.listen.bridge) as HostPort,
    admin: parseHostPort(raw.listen.admin) as HostPort,
    ...(raw.listen.socks === undefined
      ? {}
      : { socks: parseHostPort(raw.listen.socks) as HostPort }),
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
    credentials: credentialValues(raw.credentials, baseDir, report),
    kinds: knownKinds(raw),
  };
}

/**
 * The `credentials[].value` and `.sigv4.accessKeyId` strings as written (expanded): no message
 * may quote them.
 */
function givenValues(value: unknown): string[] {
  const list = (value as { credentials?: unknown }).credentials;
  if (!Array.isArray(list)) return [];
  return list.flatMap((c) => {
    const entry = c as { value?: unknown; sigv4?: { accessKeyId?: unknown } | null } | null;
    return [entry?.value, entry?.sigv4?.accessKeyId].filter((v) => typeof v === 'string');
  });
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

/** Workspaces are compared by real path, so a symlinked workspace still contains its files. */
function realDir(dir: string, baseDir: string): string {
  return physicalPath(resolve(baseDir, dir), '/') ?? resolve(baseDir, dir);
}
