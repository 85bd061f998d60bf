import { dirname, join } from 'node:path';
import type { Config } from '../config/load.js';
import { built, part } from '../config/parts.js';
import type { WithSentinels } from '../event/sentinels.js';
import { sentinels } from '../event/sentinels.js';
import { secretFile } from '../review/secret-file.js';
import type { Opening } from './trajectory.js';

export type ArmedCredential = WithSentinels<Config['credentials'][number]>;

/** Where the key that derives generated sentinels is kept: beside the journal, mode 0600. */
export function credentialKeyFile(config: {
  readonly journal: Pick<Config['journal'], 'path'>;
}): string {
  return join(dirname(config.journal.path), 'credential-key');
}

/**
 * The credentials with their sentinels, replaced by a reload (values rotate, sentinels stay:
 * they derive from the name). The key file is created the first time a credential needs a
 * generated sentinel; a key that cannot be read or made stops the start, or refuses the reload.
 */
export function openCredentials(
  initial: Config,
  { parts }: Pick<Opening, 'parts'>,
): () => readonly ArmedCredential[] {
  const file = credentialKeyFile(initial);
  let key: Buffer | undefined;
  const read = () => (key ??= Buffer.from(secretFile(file, 'the credential key'), 'utf8'));
  let armed = sentinels(initial.credentials, read);
  parts.add(
    part({
      name: 'credentials',
      reads: { credentials: true },
      configure: (next) =>
        built(
          () => sentinels(next.credentials, read),
          (made) => void (armed = made),
        ),
    }),
  );
  return () => armed;
}
