import { dirname, join } from 'node:path';
import type { Config } from '../config/load.js';
import { built, part } from '../config/parts.js';
import { TrajgateError } from '../errors.js';
import type { ArmedCredential } from '../config/credential-values.js';
import { CredentialSet } from '../event/credential-set.js';
import { sentinels } from '../event/sentinels.js';
import type { CredentialRecord } from '../journal/records.js';
import { makeJournalFolder } from '../journal/open.js';
import { secretFile } from '../review/secret-file.js';
import type { ConfigParts } from './config-parts.js';

export type { ArmedCredential };

/** Where the key that derives generated sentinels is kept: beside the journal, mode 0600. */
export function credentialKeyFile(config: {
  readonly journal: Pick<Config['journal'], 'path'>;
}): string {
  return join(dirname(config.journal.path), 'credential-key');
}

/**
 * The credentials in force: the config's with their sentinels, replaced by a reload (values
 * rotate, sentinels stay: they derive from the name), less those an operator revoked (a
 * `credential` record, rebuilt at start). The key file is created the first time a credential
 * needs a generated sentinel; a key that cannot be read or made stops the start, or refuses the
 * reload.
 */
export class Credentials {
  #armed: readonly ArmedCredential[];
  #agents: Config['agents'];
  readonly #revoked = new Set<string>();
  #set: CredentialSet<ArmedCredential>;

  constructor(armed: readonly ArmedCredential[], agents: Config['agents']) {
    this.#armed = armed;
    this.#agents = agents;
    this.#set = this.#build();
  }

  /** Every configured credential with its sentinel (revoked ones too). */
  get armed(): readonly ArmedCredential[] {
    return this.#armed;
  }

  /** What requests are judged and swapped by now. */
  get current(): CredentialSet<ArmedCredential> {
    return this.#set;
  }

  replace(armed: readonly ArmedCredential[], agents: Config['agents']): void {
    this.#armed = armed;
    this.#agents = agents;
    this.#set = this.#build();
  }

  /** An operator's revoke (`restore`: undone); false when it changed nothing. */
  revoke(name: string, revoked = true): boolean {
    if (this.#revoked.has(name) === revoked) return false;
    if (revoked) this.#revoked.add(name);
    else this.#revoked.delete(name);
    this.#set = this.#build();
    return true;
  }

  /** Names revoked now (a snapshot keeps them; some may no longer be configured). */
  get revoked(): ReadonlySet<string> {
    return this.#revoked;
  }

  /** A `credential` record read back at start (journal or snapshot): as it was decided. */
  apply(record: Pick<CredentialRecord, 'name' | 'action'>): void {
    const { name, action } = record;
    if (typeof name !== 'string' || (action !== 'revoke' && action !== 'restore'))
      throw new TrajgateError(
        'E_JOURNAL_CORRUPT',
        'credential record needs a "name" and an "action" of revoke or restore',
      );
    this.revoke(name, action === 'revoke');
  }

  #build(): CredentialSet<ArmedCredential> {
    return new CredentialSet(this.#armed, this.#agents, new Set(this.#revoked));
  }
}

export function openCredentials(
  initial: Config,
  { parts }: { readonly parts: ConfigParts },
): Credentials {
  const file = credentialKeyFile(initial);
  let key: Buffer | undefined;
  const read = () => {
    if (key !== undefined) return key;
    // Opened before the journal (a flow's basis names credentials): its folder may be new.
    makeJournalFolder(initial.journal.path);
    return (key = Buffer.from(secretFile(file, 'the credential key'), 'utf8'));
  };
  const credentials = new Credentials(sentinels(initial.credentials, read), initial.agents);
  parts.add(
    part({
      name: 'credentials',
      reads: { credentials: true, agents: true },
      configure: (next) =>
        built(
          () => sentinels(next.credentials, read),
          (made) => credentials.replace(made, next.agents),
        ),
    }),
  );
  return credentials;
}
