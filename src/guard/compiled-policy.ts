import type { OwnFiles } from '../config/own-files.js';
import type { Within } from '../config/sequences-schema.js';
import type { NetworkPattern } from '../event/network-pattern.js';
import type { Verdict } from '../wire.js';
import type { Approval } from './approvals.js';
import type { Deny } from './denies.js';
import type { TargetMatcher } from './glob.js';

/**
 * The policy as the guard uses it, compiled from the config (compile.ts): boundaries, their
 * targets, trajectory rules, allowlists and deny patterns. Types only, in one file that the
 * files judging by them (policy.ts, decision.ts, sequences.ts, guard.ts) import, so that none
 * of those imports another for a type.
 */

export type CountBy = 'boundary' | 'target';

/** A boundary as the guard uses it: which events cross it and at which counts it acts. */
export interface Boundary {
  readonly name: string;
  readonly kinds: ReadonlySet<string>;
  /** `workspace`: crossed by path events outside the session's workspace. */
  readonly outside: 'workspace' | null;
  /** Crossed only by targets matching these (globs; network patterns for network events). */
  readonly targets: Targets | null;
  /** Count at which it starts answering REVIEW; null: never reviews, only pauses. */
  readonly reviewAt: number | null;
  readonly pauseAt: number;
}

/** A boundary's or a trajectory rule's `targets`: globs, and network patterns for network events. */
export interface Targets {
  readonly glob: TargetMatcher;
  readonly network: readonly NetworkPattern[];
}

export interface GuardPolicy {
  readonly countBy: CountBy;
  readonly boundaries: readonly Boundary[];
  /** Trajectory rules (`policy.sequences`), in config order; empty costs nothing. */
  readonly sequences: readonly Sequence[];
  /** `policy.budgets`, in config order; empty costs nothing. */
  readonly budgets: readonly Budget[];
  /**
   * Approvals from configuration: `network.allow` (global), agents' and their roles' `allow`
   * (for that agent's session).
   */
  readonly allow: readonly Approval[];
  /** `network.deny`: refused whatever allows or approves them. */
  readonly deny: readonly Deny[];
  /** trajgate's own files (boundary `trajgate-files`): no event reaches them, nothing approves one. */
  readonly protected: OwnFiles;
  /** A session's effective config allowlist: network.allow, its agent's and roles' allow. */
  allowlistFor(session: string): string[];
  /** The real path of a session's workspace. */
  workspaceFor(session: string): string;
}

/** Every condition given must hold; null: not asked. */
export interface Matcher {
  readonly kinds: ReadonlySet<string> | null;
  readonly targets: Targets | null;
  readonly failed: boolean | null;
  readonly refused: boolean | null;
  readonly crossing: string | null;
  readonly approved: boolean | null;
}

/** `after` then `then`: fires on a `then` event while the rule's mark is within reach. */
export interface SequenceRule {
  readonly type: 'sequence';
  readonly name: string;
  readonly verdict: Verdict;
  readonly after: Matcher;
  readonly then: Matcher;
  readonly within: Within | null;
  /** `after` asks `failed: true`: an event matching the rest waits for its outcome. */
  readonly onFailure: boolean;
}

/** Fires once the session sent `up` bytes within `windowMs`, on `then` events (network by default). */
export interface VolumeRule {
  readonly type: 'volume';
  readonly name: string;
  readonly verdict: Verdict;
  readonly up: number;
  readonly upText: string;
  readonly windowMs: number;
  readonly windowText: string;
  readonly then: Matcher;
}

export type Sequence = SequenceRule | VolumeRule;

/** A budget (`policy.budgets`): per session and window, `limit` of its measure. */
export interface Budget {
  readonly name: string;
  readonly measure: 'requests' | 'bytesUp' | 'toolCalls' | 'hosts';
  readonly limit: number;
  /** As written (`500`, `10MB`). */
  readonly limitText: string;
  readonly windowMs: number;
  readonly windowText: string;
  readonly verdict: Verdict;
}
