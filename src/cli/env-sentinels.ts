import { readFileSync } from 'node:fs';
import type { OperatorConfig } from '../config/operator-config.js';
import { errnoCode, TrajgateError } from '../errors.js';
import { SIGV4_ENV } from '../config/credentials-schema.js';
import { isGiven } from '../event/credential-set.js';
import { sentinels } from '../event/sentinels.js';
import { credentialKeyFile } from '../gateway/credentials.js';
import { osError } from '../os-error.js';

/** A credential's variable as `trajgate env` prints it: its `env` name and its sentinel. */
export interface SentinelVar {
  readonly name: string;
  readonly sentinel: string;
  /** `credentials[2].env`: where the name comes from, for a clash. */
  readonly key: string;
}

/**
 * The sentinels of the credentials given to `agent` (every credential naming no agents or
 * roles when `agents` is not configured: `agent` null), never their values. A generated
 * sentinel needs the key the gateway made beside the journal: read here, never made (the
 * gateway would then derive other sentinels from its own).
 */
export function sentinelVars(config: OperatorConfig, agent: string | null): SentinelVar[] {
  const roles = config.agents?.find((a) => a.id === agent)?.roles ?? [];
  const given = config.credentials.flatMap((c, i) =>
    isGiven(c, agent ?? '', roles) ? [{ ...c, key: `credentials[${i}].env` }] : [],
  );
  // A signing credential's agent also holds its sentinel key id, where the AWS SDKs read it.
  return sentinels(given, () => readKey(config)).flatMap(({ env, sentinel, key, sigv4 }) => [
    { name: env ?? SIGV4_ENV, sentinel, key },
    ...(sigv4 ? [{ name: 'AWS_ACCESS_KEY_ID', sentinel: sigv4.sentinelKeyId, key }] : []),
  ]);
}

function readKey(config: OperatorConfig): Buffer {
  const file = credentialKeyFile(config);
  try {
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT')
      throw new TrajgateError(
        'E_CONFIG_READ',
        `${file}: no credential key yet (generated sentinels derive from it): start the gateway once with ${config.source} (it makes the key beside journal.path), or give each credential a fixed sentinel`,
      );
    throw osError('E_CONFIG_READ', err, {
      op: 'read',
      what: 'the credential key',
      path: file,
      key: 'journal.path',
    });
  }
}
