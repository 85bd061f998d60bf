import { createHash, timingSafeEqual } from 'node:crypto';
import type { Agent } from '../config/load.js';

/** The agent a request belongs to: its session, and the address it came from. */
export interface Who {
  readonly session: string;
  readonly client: string;
}

export type Identified =
  { readonly ok: true; readonly session: string } | { readonly ok: false; readonly reason: string };

const NONE: ReadonlySet<string> = new Set();

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** IPv4 clients on a dual-stack socket appear as `::ffff:a.b.c.d`; name them plainly. */
export function clientAddress(remote: string | undefined): string {
  if (remote === undefined) return 'unknown';
  return remote.startsWith('::ffff:') && remote.includes('.') ? remote.slice(7) : remote;
}

/**
 * Who is asking. With agents configured, credentials name the agent (its id is the session,
 * so its network and tool events form one trajectory); tokens are compared as SHA-256 digests
 * with timingSafeEqual, so neither length nor content leaks through timing. Without agents,
 * the client address names the session.
 */
export class Identity {
  #byId: Map<string, Buffer> | null = null;

  constructor(agents: readonly Agent[] | null) {
    this.replace(agents);
  }

  /**
   * A config reload's agents. Returns the sessions whose credentials changed (token rotated,
   * agent removed), or `all` when credentials became required or no longer are: their live
   * flows were admitted on credentials that no longer hold.
   */
  replace(agents: readonly Agent[] | null): ReadonlySet<string> | 'all' {
    const before = this.#byId;
    this.#byId = agents && new Map(agents.map((a) => [a.id, digest(a.token)]));
    if (before === null || this.#byId === null) return before === this.#byId ? NONE : 'all';
    const changed = new Set<string>();
    for (const [id, old] of before) {
      const now = this.#byId.get(id);
      if (now === undefined || !timingSafeEqual(old, now)) changed.add(id);
    }
    return changed;
  }

  get required(): boolean {
    return this.#byId !== null;
  }

  /** `Proxy-Authorization: Basic base64(agent-id:token)` (RFC 9110 § 11.7.2, RFC 7617). */
  fromProxyAuthorization(header: string | undefined, client: string): Identified {
    if (this.#byId === null) return { ok: true, session: client };
    if (header === undefined)
      return { ok: false, reason: 'proxy credentials required (agent id and token)' };
    const m = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (!m) return { ok: false, reason: 'proxy credentials must use the Basic scheme' };
    const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon === -1) return { ok: false, reason: 'proxy credentials must be agent-id:token' };
    return this.fromUserPassword(decoded.slice(0, colon), decoded.slice(colon + 1), client);
  }

  /** RFC 1929 username/password (SOCKS5): the agent id and token, as Proxy-Authorization's. */
  fromUserPassword(id: string, token: string, client: string): Identified {
    if (this.#byId === null) return { ok: true, session: client };
    return this.#check(id, token);
  }

  /**
   * `Authorization: Bearer TOKEN` on the bridge (RFC 6750): the token alone names the agent,
   * so it is compared against every agent's token.
   */
  fromBearer(header: string | undefined, client: string): Identified {
    if (this.#byId === null) return { ok: true, session: client };
    const m = /^bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!m) return { ok: false, reason: 'agent token required (Authorization: Bearer TOKEN)' };
    const given = digest(m[1] as string);
    let session: string | null = null;
    for (const [id, expected] of this.#byId) if (timingSafeEqual(given, expected)) session ??= id;
    return session === null ? { ok: false, reason: 'wrong agent token' } : { ok: true, session };
  }

  #check(id: string, token: string): Identified {
    const expected = (this.#byId as Map<string, Buffer>).get(id);
    const given = digest(token);
    // Compare even for an unknown id, so timing does not reveal which ids exist.
    const match = timingSafeEqual(given, expected ?? digest('')) && expected !== undefined;
    return match ? { ok: true, session: id } : { ok: false, reason: 'wrong agent id or token' };
  }
}
