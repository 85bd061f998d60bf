import { SIGV4_ENV } from '../config/credentials-schema.js';
import { TrajgateError } from '../errors.js';
import type { JournalWriter } from '../journal/writer.js';
import type { BasisParts } from '../pipeline/flow-basis.js';
import { rejudgeFlows } from '../pipeline/flow-basis.js';
import { operate } from '../review/api-rules.js';
import type { CredentialAnswer, CredentialView } from '../wire.js';
import type { ArmedCredential, Credentials } from './credentials.js';

/**
 * The operators' credential actions (`GET /api/credentials`, `POST
 * /api/credentials/:name/revoke|restore`): a revoke is journaled (and synced) before it takes
 * effect, a journal that cannot be written refuses it (503, nothing changed); then requests
 * carrying the sentinel are refused as out of place and every live flow that carried it closes.
 */
export class CredentialDesk {
  constructor(
    private readonly journal: JournalWriter,
    private readonly parts: BasisParts & { readonly credentials: Credentials },
  ) {}

  list(): CredentialView[] {
    const { armed, revoked } = this.parts.credentials;
    return armed.map((c) => credentialView(c, revoked.has(c.name)));
  }

  /** Revokes (`revoked`) or restores `name`; unchanged when it already was so. */
  set(name: string, revoked: boolean, by: string): CredentialAnswer {
    const credentials = this.parts.credentials;
    const c = credentials.armed.find((a) => a.name === name);
    if (c === undefined) {
      const known = credentials.armed.map((a) => a.name).join(', ') || 'none are configured';
      throw new TrajgateError(
        'E_UNKNOWN_CREDENTIAL',
        `no credential ${JSON.stringify(name)} (credentials: ${known})`,
      );
    }
    const action = revoked ? 'revoke' : 'restore';
    if (credentials.revoked.has(name) === revoked)
      return { credential: credentialView(c, revoked), changed: false, closed: 0 };
    operate(() => this.journal.append({ type: 'credential', name, action, by }, { sync: true }));
    credentials.revoke(name, revoked);
    const closed = revoked ? rejudgeFlows(this.parts, `credential ${name} revoked`) : 0;
    return { credential: credentialView(c, revoked), changed: true, closed };
  }
}

export function credentialView(c: ArmedCredential, revoked: boolean): CredentialView {
  // Config's Omit over the header | query union keeps neither key in the type.
  const to = c as { header?: string; scheme?: string; query?: string };
  const place =
    c.sigv4 !== undefined
      ? 'AWS SigV4 signature'
      : to.query !== undefined
        ? `query ${to.query}`
        : `header ${to.header}${to.scheme === undefined ? '' : ` (${to.scheme})`}`;
  return {
    name: c.name,
    hosts: c.hosts,
    env: c.env ?? SIGV4_ENV,
    sentinel: c.sentinel,
    place,
    agents: c.agents ?? null,
    roles: c.roles ?? null,
    revoked,
  };
}
