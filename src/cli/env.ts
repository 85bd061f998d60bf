import { isIP } from 'node:net';
import { join, posix } from 'node:path';
import { parseArgs } from 'node:util';
import { expandParts } from '../config/env.js';
import type { HostPort } from '../config/formats.js';
import { formatHostPort } from '../config/formats.js';
import type { OperatorConfig } from '../config/operator-config.js';
import { loadOperatorConfig } from '../config/operator-config.js';
import { TrajgateError } from '../errors.js';
import { CA_CERT } from '../tls/ca.js';
import { CA_BUNDLE, ensureCaBundle } from '../tls/ca-bundle.js';
import { readCaFile } from '../tls/ca-read.js';
import type { ClientView, EnvFormat, Value } from './env-vars.js';
import { clientVars, formatVars } from './env-vars.js';
import type { SentinelVar } from './env-sentinels.js';
import { sentinelVars } from './env-sentinels.js';
import { usageOf } from './help.js';

const FORMATS: readonly EnvFormat[] = ['shell', 'compose', 'json'];
/** RFC 1123 host names: letters, digits and hyphens in dot-separated labels. */
const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * `trajgate env [AGENT]`: every variable a client needs to go through this gateway as AGENT,
 * for `eval` in sh, a compose file or JSON. Reads the config as operator commands do: only
 * AGENT's own token must be set (an unset one is printed as a `${VAR}` reference).
 */
export async function env(
  argv: string[],
  print: (text: string) => void,
  warn: (line: string) => void,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      host: { type: 'string' },
      format: { type: 'string' },
      json: { type: 'boolean' },
      'ca-path': { type: 'string' },
    },
  });
  if (positionals.length > 1) throw new TrajgateError('E_USAGE', usageOf('env'));
  const format = values.json ? 'json' : (values.format ?? 'shell');
  if (!FORMATS.includes(format as EnvFormat) || (values.json && values.format !== undefined))
    throw new TrajgateError(
      'E_USAGE',
      `--format ${values.format}: expected shell, compose or json (--json is --format json)`,
    );
  const host = values.host === undefined ? undefined : givenHost(values.host);
  const caPath = values['ca-path'];
  if (caPath !== undefined && !posix.isAbsolute(caPath))
    throw new TrajgateError('E_USAGE', `--ca-path ${caPath}: expected an absolute path`);
  const config = loadOperatorConfig(values.config);
  const agent = agentOf(config, positionals[0], format as EnvFormat, warn);
  const sentinels = sentinelVars(config, agent?.id ?? null);
  const view: ClientView = {
    proxy: reached(config, 'proxy', host),
    bridge: reached(config, 'bridge', host),
    agent,
    ca: config.tls.intercept.length > 0 ? caFiles(config, caPath, warn) : null,
    sentinels,
  };
  const vars = clientVars(view);
  clashes(vars, sentinels, config.source);
  print(formatVars(vars, format as EnvFormat));
  return 0;
}

/** A credential's `env` that names a variable trajgate prints for itself would replace it. */
function clashes(
  vars: readonly [string, unknown][],
  sentinels: readonly SentinelVar[],
  source: string,
) {
  const own = vars.slice(0, vars.length - sentinels.length).map(([name]) => name);
  for (const s of sentinels)
    if (own.includes(s.name))
      throw new TrajgateError(
        'E_CONFIG_INVALID',
        `${source}: ${s.key} is ${s.name}, a variable trajgate env prints for the agent itself: give the credential another env`,
      );
}

function givenHost(host: string): string {
  const bare = /^\[(.*)\]$/.exec(host)?.[1] ?? host;
  if (isIP(bare) === 0 && !HOST_NAME.test(bare))
    throw new TrajgateError(
      'E_USAGE',
      `--host ${JSON.stringify(host)}: expected a host name or an IP address`,
    );
  return bare;
}

/** A listener as agents reach it: `--host` for its host, its port as configured. */
export function reached(
  config: OperatorConfig,
  which: 'proxy' | 'bridge',
  host?: string,
): HostPort {
  const at = config.listen[which];
  const key = `listen.${which} (${formatHostPort(at)}) in ${config.source}`;
  if (at.port === 0)
    throw new TrajgateError(
      'E_USAGE',
      `${key} is port 0, chosen when the gateway starts: give the port in the config`,
    );
  if (host !== undefined) return { host, port: at.port };
  if (/^[0:.]+$/.test(at.host) && isIP(at.host) !== 0)
    throw new TrajgateError(
      'E_USAGE',
      `${key} listens on every address: give --host NAME, the name or address agents reach the gateway at (a compose service name, a VM's address)`,
    );
  return at;
}

/** The agent and its token; null without `agents` (the client address names the session). */
function agentOf(
  config: OperatorConfig,
  id: string | undefined,
  format: EnvFormat,
  warn: (line: string) => void,
): ClientView['agent'] {
  const agents = config.agents;
  if (agents === null) {
    if (id !== undefined)
      warn(
        `trajgate env: ${config.source} configures no agents (the client address names the session): ${JSON.stringify(id)} is not used`,
      );
    return null;
  }
  const known = `agents in ${config.source}: ${agents.map((a) => a.id).join(', ')}`;
  const i = agents.findIndex((a) => a.id === id);
  if (id === undefined || i === -1)
    throw new TrajgateError(
      'E_USAGE',
      id === undefined
        ? `name the agent: trajgate env AGENT (${known})`
        : `no agent ${JSON.stringify(id)} (${known})`,
    );
  const unset = config.unset.get(`agents[${i}].token`);
  if (unset === undefined) return { id, token: [{ text: (agents[i] as { token: string }).token }] };
  const token: Value = expandParts(unset.written, process.env);
  const refs = token.flatMap((p) => ('ref' in p ? [`\${${p.ref}}`] : []));
  const filler =
    format === 'json' ? 'whoever reads it' : format === 'compose' ? 'compose' : 'the shell';
  warn(
    `trajgate env: agents[${i}].token: ${refs.join(', ')} not set here, printed as is for ${filler} to fill in; in the proxy URL its value must be URL-safe (letters, digits, - . _ ~)`,
  );
  return { id, token };
}

/**
 * The CA certificate and the bundle as the agent sees them: in the CA folder (tls.ca), or
 * beside `--ca-path`. The bundle is (re)written beside the CA here, ready to mount.
 */
export function caFiles(
  config: OperatorConfig,
  caPath: string | undefined,
  warn: (line: string) => void,
): ClientView['ca'] {
  const dir = config.tls.ca;
  let bundle: string | null = null;
  try {
    bundle = ensureCaBundle(dir, readCaFile(join(dir, CA_CERT), dir));
  } catch (err) {
    if (caPath === undefined) throw err;
    warn(
      `trajgate env: ${(err as Error).message}; ${posix.join(posix.dirname(caPath), CA_BUNDLE)} must exist where the agent runs (trajgate ca init writes it)`,
    );
  }
  if (caPath !== undefined)
    return { cert: caPath, bundle: posix.join(posix.dirname(caPath), CA_BUNDLE) };
  return { cert: join(dir, CA_CERT), bundle: bundle as string };
}
