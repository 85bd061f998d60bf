import { TrajgateError } from '../errors.js';
import { keyPath } from './issues.js';
import type { Config, UnsetVar } from './load.js';
import { defaultConfig, loadConfigFile } from './load.js';

/** Long enough for any token's minimum length; never sent anywhere (see OperatorConfig). */
const TOKEN = (name: string) => `unset-${name}-placeholder`;

/**
 * Secrets only a running gateway uses, with what stands in for each when its variable is
 * unset (a URL where a URL is due): agents' tokens, admin tokens, credentials' values and AWS
 * key ids, what notifications are sent and signed with, the collector's headers, the shared store's URL (its password).
 * An operator's shell need not hold them: commands that do need one ask for it by name
 * (needSet).
 */
const SECRETS: readonly (readonly [RegExp, (name: string) => string])[] = [
  [/^agents\.\d+\.token$/, TOKEN],
  [/^admin\.(token|tokens\.\d+\.token)$/, TOKEN],
  [/^credentials\.\d+\.(value|sigv4\.accessKeyId)$/, TOKEN],
  [/^notify\.(secret|linkKey|headers\..+)$/, TOKEN],
  [/^notify\.webhook$/, () => 'http://unset.invalid/'],
  [/^telemetry\.otlp\.headers\..+$/, TOKEN],
  [/^state\.redis\.url$/, () => 'redis://unset.invalid/'],
];

/** A secret whose variable is unset where the command runs. */
export interface UnsetSecret {
  /** The value as written, e.g. `${AGENT_1_TOKEN}`. */
  readonly written: string;
  /** What `start` would say of it: `file:line:col key: environment variable VAR is not set`. */
  readonly errors: readonly string[];
}

/**
 * The config as operator commands read it. The values of `unset` keys are stand-ins: never
 * sent, printed or compared with anything (needSet refuses a command that needs one).
 */
export interface OperatorConfig extends Config {
  /** By key path: `agents[0].token`, `admin.token`, `state.redis.url`. */
  readonly unset: ReadonlyMap<string, UnsetSecret>;
}

/**
 * For commands other than `start` and `check-config` (sessions, approve, replay, env, …): the
 * file (or the embedded default) with unset `${VAR}`s in SECRETS standing in. Any other unset
 * variable is still an error.
 */
export function loadOperatorConfig(
  file: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): OperatorConfig {
  const unset = new Map<string, { written: string; errors: string[] }>();
  if (file === undefined) return { ...defaultConfig(), unset };
  const standIn = (u: UnsetVar): string | undefined => {
    const dotted = u.path.join('.');
    const found = SECRETS.find(([re]) => re.test(dotted));
    if (found === undefined) return undefined;
    const key = keyPath(u.path);
    const entry = unset.get(key) ?? { written: u.written, errors: [] };
    entry.errors.push(u.error);
    unset.set(key, entry);
    return found[1](u.name);
  };
  return { ...loadConfigFile(file, env, { standIn }), unset };
}

/** Refuses to go on when `key` is a stand-in: this command needs its real value. */
export function needSet(config: OperatorConfig, key: string, hint = ''): void {
  const missing = config.unset.get(key);
  if (missing === undefined) return;
  throw new TrajgateError(
    'E_CONFIG_INVALID',
    `${config.source}: this command needs ${key}${hint}`,
    missing.errors,
  );
}
