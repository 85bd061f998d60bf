import type { Exfiltration, NetworkSubject } from './event.js';
import type { NetworkPattern } from './network-pattern.js';
import { matchesNetwork, parseNetworkPattern } from './network-pattern.js';
import type { SentinelFinding } from './sentinel-scan.js';
import { SentinelScanner } from './sentinel-scan.js';

/** The credentials in force now (gateway/credentials.ts: an operator's revoke, a reload). */
export interface CredentialsInForce<C extends CredentialEntry = CredentialEntry> {
  readonly current: CredentialSet<C>;
}

/** A credential as the gateway runs it: its config entry with its sentinel. */
export interface CredentialEntry {
  readonly name: string;
  readonly sentinel: string;
  readonly value: string;
  readonly hosts: readonly string[];
  readonly allowPlaintext: boolean;
  readonly agents?: readonly string[] | undefined;
  readonly roles?: readonly string[] | undefined;
}

/** What a request's sentinels come to: those it carries to their own hosts, or the first out of place. */
export interface Sorted {
  readonly uses: readonly string[];
  readonly out: Exfiltration | undefined;
}

/**
 * The credentials in force (a reload's, less those an operator revoked), and who may use each
 * where: a credential goes only to its `hosts`, from the agents it names (or whose roles it
 * names; every session when it names neither). Every sentinel is looked for everywhere: one
 * found anywhere else, or from an agent it was not given to, is out of place.
 */
export class CredentialSet<C extends CredentialEntry = CredentialEntry> {
  /** Finds every credential's sentinel, revoked ones too (null: no credentials). */
  readonly scanner: SentinelScanner | null;
  readonly #entries: readonly { readonly c: C; readonly hosts: readonly NetworkPattern[] }[];
  readonly #byName: ReadonlyMap<string, C>;
  readonly #rolesOf: ReadonlyMap<string, readonly string[]>;
  readonly revoked: ReadonlySet<string>;

  constructor(
    credentials: readonly C[],
    agents: readonly { readonly id: string; readonly roles: readonly string[] }[] | null,
    revoked: ReadonlySet<string>,
  ) {
    this.#entries = credentials.map((c) => ({ c, hosts: c.hosts.map(parseNetworkPattern) }));
    this.#byName = new Map(credentials.map((c) => [c.name, c]));
    this.#rolesOf = new Map((agents ?? []).map((a) => [a.id, a.roles]));
    this.revoked = revoked;
    this.scanner = credentials.length === 0 ? null : new SentinelScanner(credentials);
  }

  get size(): number {
    return this.#entries.length;
  }

  byName(name: string): C | undefined {
    return this.#byName.get(name);
  }

  /** Whether `session`'s agent was given the credential. */
  givenTo(c: C, session: string): boolean {
    return isGiven(c, session, this.#rolesOf.get(session) ?? []);
  }

  /** The credentials given to `session` whose hosts cover the destination (revoked ones too). */
  forHost(subject: NetworkSubject, session: string): C[] {
    const own: C[] = [];
    for (const { c, hosts } of this.#entries)
      if (this.givenTo(c, session) && hosts.some((p) => matchesNetwork(p, subject))) own.push(c);
    return own;
  }

  /**
   * Findings in one place (`where`: `header X-Token`, `url`, `body`): a sentinel of `own` is a use,
   * any other out of place (the first one found is reported).
   */
  sort(findings: readonly SentinelFinding[], own: readonly C[], where: string): Sorted {
    const uses: string[] = [];
    for (const f of findings) {
      if (!own.some((c) => c.name === f.name))
        return { uses, out: { credential: f.name, where: placed(where, f.spelling) } };
      if (!uses.includes(f.name)) uses.push(f.name);
    }
    return { uses, out: undefined };
  }

  /** Why a flow carrying `names` to its own hosts must stop now (revoked, removed), or null. */
  lapsed(names: readonly string[], session: string): string | null {
    for (const name of names) {
      if (this.revoked.has(name)) return `credential ${name} was revoked`;
      const c = this.#byName.get(name);
      if (c === undefined) return `credential ${name} is no longer configured`;
      if (!this.givenTo(c, session)) return `credential ${name} is no longer given to ${session}`;
    }
    return null;
  }
}

/** Whether the agent `id` with `roles` was given `c`: every agent when it names none. */
export function isGiven(
  c: Pick<CredentialEntry, 'agents' | 'roles'>,
  id: string,
  roles: readonly string[],
): boolean {
  if (c.agents === undefined && c.roles === undefined) return true;
  if (c.agents?.includes(id) === true) return true;
  return c.roles?.some((r) => roles.includes(r)) === true;
}

/** `body (base64)`: where, and the encoding when it was not found as is. */
export const placed = (where: string, spelling: string): string =>
  spelling === 'raw' ? where : `${where} (${spelling})`;
