import type { Event } from '../event/event.js';
import type { NetworkPattern } from '../event/network-pattern.js';
import { matchesAuthority, matchesNetwork, parseNetworkPattern } from '../event/network-pattern.js';
import type { DenyView } from '../wire.js';

export interface DenySpec {
  readonly pattern: string;
  /** One session, or null for every session. */
  readonly session?: string | null;
  readonly origin?: 'config' | 'operator';
  /** `d<seq>` of its block record, `cd<n>` for a `network.deny` entry. */
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
  test(event: Event): boolean;
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
  return {
    id,
    pattern: spec.pattern,
    session: spec.session ?? null,
    origin,
    source: origin === 'config' ? 'network.deny' : 'operator',
    by: spec.by ?? null,
    reason:
      origin === 'config'
        ? `network.deny: ${spec.pattern}`
        : `blocked by an operator (${id}): ${spec.pattern}`,
    network: p,
    test: (e) => e.subject.type === 'network' && matchesNetwork(p, e.subject, true),
    coversAuthority: (e) =>
      narrow && e.subject.type === 'network' && matchesAuthority(p, e.subject, true),
  };
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

  /** The first deny that refuses the event, config entries first. */
  match(event: Event): Deny | undefined {
    if (this.#config.length === 0 && this.#operator.length === 0) return undefined;
    const applies = (d: Deny) =>
      (d.session === null || d.session === event.session) && d.test(event);
    return this.#config.find(applies) ?? this.#operator.find(applies);
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
