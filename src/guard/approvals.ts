import type { Event } from '../event/event.js';
import { TrajgateError } from '../errors.js';
import { globMatcher, treeCoverer } from './glob.js';
import type { NetworkPattern, TunnelProtocol } from '../event/network-pattern.js';
import {
  matchesAuthority,
  matchesHost,
  matchesNetwork,
  parseNetworkPattern,
  tunnelProtocolOf,
} from '../event/network-pattern.js';

export interface ApprovalSpec {
  readonly pattern: string;
  /** The event kind it approves; network unless said otherwise. */
  readonly kind?: string;
  /** One session, or null for every session. */
  readonly session?: string | null;
  /** Milliseconds since the epoch, judged against the event's own `ts`; null never expires. */
  readonly expiresAt?: number | null;
  /** `config` for `network.allow`, else `operator` (an approval someone added). */
  readonly origin?: 'config' | 'operator';
  /**
   * How operators name it: `a<seq>` of its approve record, `c<n>` for a config entry. Left
   * out (tests, a check before journaling), `pattern` stands in.
   */
  readonly id?: string;
  /** Where from: `network.allow`, `agents.<id>.allow`, `roles.<name>.allow`, `operator`. */
  readonly source?: string;
  /** Who approved it (the admin token's name); null for config entries. */
  readonly by?: string | null;
}

/** The protocols a tunnel must carry, and the patterns that say so (for reasons). */
export interface RequiredProtocols {
  readonly protocols: ReadonlySet<TunnelProtocol>;
  readonly patterns: readonly string[];
}

export interface Approval {
  readonly id: string;
  readonly pattern: string;
  readonly kind: string;
  readonly session: string | null;
  readonly expiresAt: number | null;
  readonly origin: 'config' | 'operator';
  readonly source: string;
  readonly by: string | null;
  /** A network approval's parsed pattern (null for other kinds): refusals explain misses. */
  readonly network: NetworkPattern | null;
  /** A network approval whose pattern names its port (see NetworkPattern.portNamed). */
  readonly namesPort: boolean;
  test(event: Event): boolean;
  /**
   * A network approval naming a method or path (for plain HTTP): whether it covers the event's
   * host and port, so that requests inside a CONNECT to them must be read to be judged.
   */
  coversAuthority(event: Event): boolean;
}

/**
 * Network approvals use the allowlist grammar; other kinds use target globs, which must match
 * every reading of a path (an ambiguous path is approved only if both readings are), and for a
 * tree read every path under it (`/x/**`, not `/x`).
 */
export function compileApproval(spec: ApprovalSpec): Approval {
  const kind = spec.kind ?? 'network';
  const origin = spec.origin ?? 'operator';
  const base = {
    id: spec.id ?? spec.pattern,
    pattern: spec.pattern,
    kind,
    session: spec.session ?? null,
    expiresAt: spec.expiresAt ?? null,
    origin,
    source: spec.source ?? (origin === 'config' ? 'network.allow' : 'operator'),
    by: spec.by ?? null,
    network: null,
    namesPort: false,
    coversAuthority: () => false,
  };
  if (kind === 'network') {
    const p = parseNetworkPattern(spec.pattern);
    // Only a pattern that plain HTTP can satisfy makes a tunnel worth reading; an https one
    // needs interception.
    const narrow = (p.method !== null || p.pathPrefix !== null) && p.scheme !== 'https';
    return {
      ...base,
      network: p,
      namesPort: p.portNamed,
      test: (e) => e.subject.type === 'network' && matchesNetwork(p, e.subject),
      coversAuthority: (e) =>
        narrow && e.subject.type === 'network' && matchesAuthority(p, e.subject),
    };
  }
  if (spec.pattern.trim() === '') {
    throw new TrajgateError('E_PATTERN_INVALID', 'pattern is empty');
  }
  const m = globMatcher([spec.pattern]);
  const tree = treeCoverer(spec.pattern);
  return {
    ...base,
    test: (e) => {
      if (e.kind !== kind) return false;
      const s = e.subject;
      if (s.type !== 'path') return m.test(e.target);
      // A tree read is approved only where everything under its root is.
      const test = s.tree === true ? tree : m.test;
      return s.path !== null && test(s.path) && (s.alias === null || test(s.alias));
    },
  };
}

/**
 * Global approvals plus per-session ones. Matching changes nothing (an expired approval is
 * passed over); `prune` drops the expired ones once a committed event's time passes them.
 */
export class ApprovalSet {
  #global: Approval[] = [];
  readonly #bySession = new Map<string, Approval[]>();
  /** The earliest expiry among those held, so that `prune` is free until then. */
  #nextExpiry = Infinity;

  add(approval: Approval): void {
    if (approval.expiresAt !== null)
      this.#nextExpiry = Math.min(this.#nextExpiry, approval.expiresAt);
    if (approval.session === null) {
      this.#global.push(approval);
      return;
    }
    const list = this.#bySession.get(approval.session);
    if (list) list.push(approval);
    else this.#bySession.set(approval.session, [approval]);
  }

  match(event: Event): Approval | undefined {
    return find(this.#global, event) ?? find(this.#bySession.get(event.session), event);
  }

  /** The approval with this id, unexpired at `now`. */
  byId(id: string, now: number): Approval | undefined {
    return this.all(now).find((a) => a.id === id);
  }

  /** Removes the approval with this id (an operator revoked it); returns it. */
  remove(id: string): Approval | undefined {
    const found = this.all(-Infinity).find((a) => a.id === id);
    if (found === undefined) return undefined;
    if (found.session === null) {
      this.#global = this.#global.filter((a) => a !== found);
      return found;
    }
    const kept = (this.#bySession.get(found.session) ?? []).filter((a) => a !== found);
    if (kept.length === 0) this.#bySession.delete(found.session);
    else this.#bySession.set(found.session, kept);
    return found;
  }

  /**
   * Swaps the config entries for `config` (a reload), keeping operators' approvals; config
   * entries stay first, as at start.
   */
  replaceConfig(config: readonly Approval[]): void {
    const operators = this.all(-Infinity).filter((a) => a.origin !== 'config');
    this.#global = [];
    this.#bySession.clear();
    this.#nextExpiry = Infinity;
    for (const a of [...config, ...operators]) this.add(a);
  }

  /** Drops the approvals expired at `now`. */
  prune(now: number): void {
    if (now < this.#nextExpiry) return;
    this.#nextExpiry = Infinity;
    const keep = (list: Approval[]) =>
      list.filter((a) => {
        if (a.expiresAt === null) return true;
        if (a.expiresAt <= now) return false;
        this.#nextExpiry = Math.min(this.#nextExpiry, a.expiresAt);
        return true;
      });
    this.#global = keep(this.#global);
    for (const [session, list] of this.#bySession) {
      const kept = keep(list);
      if (kept.length === 0) this.#bySession.delete(session);
      else this.#bySession.set(session, kept);
    }
  }

  /** The first unexpired approval for the event's session that covers its authority only. */
  matchAuthority(event: Event): Approval | undefined {
    const covers = (a: Approval) =>
      (a.expiresAt === null || a.expiresAt > event.ts) && a.coversAuthority(event);
    return this.#global.find(covers) ?? this.#bySession.get(event.session)?.find(covers);
  }

  /**
   * What the approvals covering `event` (a tunnel) require it to carry: when each names a
   * protocol (`ssh://…`), those protocols and their patterns; null when one requires none or
   * none covers it.
   */
  protocolsFor(event: Event): RequiredProtocols | null {
    const protocols = new Set<TunnelProtocol>();
    const patterns: string[] = [];
    for (const list of [this.#global, this.#bySession.get(event.session) ?? []]) {
      for (const a of list) {
        if ((a.expiresAt !== null && a.expiresAt <= event.ts) || !a.test(event)) continue;
        const protocol = a.network === null ? null : tunnelProtocolOf(a.network);
        if (protocol === null) return null;
        protocols.add(protocol);
        patterns.push(a.pattern);
      }
    }
    return patterns.length === 0 ? null : { protocols, patterns };
  }

  /** The patterns of the session's unexpired network approvals that name `host` (for reasons). */
  naming(session: string, host: string, now: number): NetworkPattern[] {
    const out: NetworkPattern[] = [];
    for (const list of [this.#global, this.#bySession.get(session) ?? []]) {
      for (const a of list) {
        if (a.network === null || (a.expiresAt !== null && a.expiresAt <= now)) continue;
        if (matchesHost(a.network, host)) out.push(a.network);
      }
    }
    return out;
  }

  /** Every approval unexpired at `now`, global ones first. */
  all(now: number): Approval[] {
    return [...this.#global, ...[...this.#bySession.values()].flat()].filter(
      (a) => a.expiresAt === null || a.expiresAt > now,
    );
  }

  /** The approvals that apply to a session (global ones included), unexpired at `now`. */
  list(session: string | null, now: number): Approval[] {
    const own = session === null ? [] : (this.#bySession.get(session) ?? []);
    return [...this.#global, ...own].filter((a) => a.expiresAt === null || a.expiresAt > now);
  }
}

function find(list: Approval[] | undefined, event: Event): Approval | undefined {
  if (!list) return undefined;
  for (const a of list)
    if ((a.expiresAt === null || a.expiresAt > event.ts) && a.test(event)) return a;
  return undefined;
}
