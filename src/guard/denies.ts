import type { Event } from '../event/event.js';
import type { NetworkPattern } from '../event/network-pattern.js';
import { matchesAuthority, parseNetworkPattern, reachesNetwork } from '../event/network-pattern.js';
import type { DenyView } from '../wire.js';

export interface DenySpec {
  readonly pattern: string;
  /** One session, or null for every session. */
  readonly session?: string | null;
  readonly origin?: 'config' | 'operator';
  /** `d<seq>` of its deny-pattern record, `cd<n>` for a `network.deny` entry. */
  readonly id?: string;
  readonly by?: string | null;
}

/**
 * A pattern refused whatever allows or approves it (the allowlist grammar; without a port it
 * covers every port, so that denying a host cannot be stepped around on another port). What
 * the API shows of it (DenyView), and how it matches.
 */
export interface Deny extends DenyView {
  /** What a refused event's record says in `denied`. */
  readonly reason: string;
  readonly network: NetworkPattern;
  /**
   * Why it refuses the event (`reason`, plus the reading of the path it covers when that is
   * not the path as sent), or null when it does not.
   */
  refuses(event: Event): string | null;
  /**
   * A deny naming a method or path covers the event's host and port: a tunnel there cannot be
   * let through blind, its requests must be read for the deny to be checked.
   */
  coversAuthority(event: Event): boolean;
}

/** Throws E_PATTERN_INVALID for a pattern that does not parse. */
export function compileDeny(spec: DenySpec): Deny {
  const p = parseNetworkPattern(spec.pattern);
  const origin = spec.origin ?? 'operator';
  const id = spec.id ?? spec.pattern;
  const narrow = p.method !== null || p.pathPrefix !== null;
  const reason =
    origin === 'config'
      ? `network.deny: ${spec.pattern}`
      : `blocked by an operator (${id}): ${spec.pattern}`;
  return {
    id,
    pattern: spec.pattern,
    session: spec.session ?? null,
    origin,
    source: origin === 'config' ? 'network.deny' : 'operator',
    by: spec.by ?? null,
    reason,
    network: p,
    refuses: (e) => {
      if (e.subject.type !== 'network') return null;
      const reading = reachesNetwork(p, e.subject, true);
      if (reading === null) return null;
      return reading.how === ''
        ? reason
        : `${reason} (the path ${shown(e.subject.path)} is ${JSON.stringify(reading.path)} when read ${reading.how}, as servers may)`;
    },
    coversAuthority: (e) =>
      narrow && e.subject.type === 'network' && matchesAuthority(p, e.subject, true),
  };
}

export interface DenyMatch {
  readonly deny: Deny;
  /** The deny's reason, and how the path was read when not as sent. */
  readonly reason: string;
}

/** Longest path quoted in a reason (agents' paths can be long). */
const SHOWN = 80;

function shown(path: string | null): string {
  const p = path ?? '';
  return JSON.stringify(p.length > SHOWN ? `${p.slice(0, SHOWN)}…` : p);
}

function first(denies: readonly Deny[], event: Event): DenyMatch | undefined {
  for (const deny of denies) {
    if (deny.session !== null && deny.session !== event.session) continue;
    const reason = deny.refuses(event);
    if (reason !== null) return { deny, reason };
  }
  return undefined;
}

/** Config and operators' deny patterns, global and per session. */
export class DenySet {
  #config: Deny[] = [];
  #operator: Deny[] = [];

  constructor(config: readonly Deny[]) {
    this.#config = [...config];
  }

  add(deny: Deny): void {
    this.#operator.push(deny);
  }

  /** Swaps the config entries (a reload); operators' denies stay. */
  replaceConfig(config: readonly Deny[]): void {
    this.#config = [...config];
  }

  /** The first deny that refuses the event, config entries first, and why. */
  match(event: Event): DenyMatch | undefined {
    return first(this.#config, event) ?? first(this.#operator, event);
  }

  coversAuthority(event: Event): boolean {
    return this.all(event.session).some((d) => d.coversAuthority(event));
  }

  byId(id: string): Deny | undefined {
    return this.all(null, true).find((d) => d.id === id);
  }

  remove(id: string): Deny | undefined {
    const found = this.#operator.find((d) => d.id === id);
    if (found !== undefined) this.#operator = this.#operator.filter((d) => d !== found);
    return found;
  }

  /** The denies that apply to a session (global ones included); every one with `everyone`. */
  all(session: string | null, everyone = false): Deny[] {
    return [...this.#config, ...this.#operator].filter(
      (d) => everyone || d.session === null || d.session === session,
    );
  }
}
