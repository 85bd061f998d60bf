import type { RawJournal } from '../config/journal-schema.js';
import { TrajgateError } from '../errors.js';
import type { Guard } from '../guard/guard.js';
import type { TrajectoryStore } from '../guard/store.js';
import type { EncodedSession } from '../guard/state-codec.js';
import { decodeSession, encodeSession } from '../guard/state-codec.js';
import type { EventRecord } from '../journal/records.js';
import type { RotateOptions } from '../journal/rotate.js';
import type { SessionIndex } from '../journal/session-index.js';
import type { Denials } from './pause-ends.js';
import type { Review, TrailState } from './review.js';

/**
 * What a snapshot record holds (version 1): everything a restart rebuilds from the journal,
 * as plain JSON. Restoring it and then applying the lines after it ends in the state a replay
 * of the whole history gives (test/unit/journal-rotation.test.ts checks this).
 */
export interface SnapshotState {
  /** The guard's sessions, in the order they first had state. */
  readonly sessions: [string, EncodedSession][];
  /** Operators' approvals and deny patterns (config ones come from the config). */
  readonly approvals: ApprovalDump[];
  readonly denies: DenyDump[];
  /** Review's trails (pause records, flags, marking events) and each session's recent events. */
  readonly trails: [string, TrailState][];
  readonly recent: [string, EventRecord[]][];
  /** Per session, its last deny's seq (decision links). */
  readonly denials: [string, number][];
}

interface ApprovalDump {
  readonly id: string;
  readonly pattern: string;
  readonly kind: string;
  readonly session: string | null;
  readonly expiresAt: number | null;
  readonly by: string | null;
}

interface DenyDump {
  readonly id: string;
  readonly pattern: string;
  readonly session: string | null;
  readonly by: string | null;
}

/** The parts whose state a snapshot holds. */
export interface SnapshotParts {
  readonly guard: Guard;
  readonly store: TrajectoryStore<EventRecord>;
  readonly review: Review;
  readonly denials: Denials;
}

export function captureState({ guard, store, review, denials }: SnapshotParts): SnapshotState {
  const sessions: [string, EncodedSession][] = [];
  for (const [id, s] of guard.sessions()) sessions.push([id, encodeSession(s)]);
  // Expired ones not yet pruned too: a replay would still hold them.
  const approvals = guard.approvals
    .all(-Infinity)
    .filter((a) => a.origin === 'operator')
    .map(({ id, pattern, kind, session, expiresAt, by }) => ({
      id,
      pattern,
      kind,
      session,
      expiresAt,
      by,
    }));
  const denies = guard.denies
    .all(null, true)
    .filter((d) => d.origin === 'operator')
    .map(({ id, pattern, session, by }) => ({ id, pattern, session, by }));
  const trails = review.trails();
  const recent = trails.map(([id]): [string, EventRecord[]] => [id, [...store.recent(id)]]);
  return { sessions, approvals, denies, trails, recent, denials: denials.entries() };
}

/**
 * Installs a snapshot's state into fresh parts (before the lines after it are applied); the
 * index learns which sessions have events in older files. A snapshot that does not have the
 * shape of version 1 is E_JOURNAL_CORRUPT.
 */
export function restoreState(
  value: unknown,
  parts: SnapshotParts & { readonly index?: SessionIndex; readonly recentEvents: number },
): void {
  const state = value as SnapshotState;
  const lists = ['sessions', 'approvals', 'denies', 'trails', 'recent', 'denials'] as const;
  if (typeof value !== 'object' || value === null || lists.some((k) => !Array.isArray(state[k])))
    throw new TrajgateError('E_JOURNAL_CORRUPT', `snapshot state lacks one of ${lists.join(', ')}`);
  const { guard, store, review, denials, index } = parts;
  try {
    restoreGuard(state, guard, store);
    review.restoreTrails(state.trails);
    for (const [id, records] of state.recent)
      for (const r of records) store.remember(id, r, parts.recentEvents);
    denials.restore(state.denials);
    // Refused handshakes are listed with the events (journal/session-index.ts).
    for (const [id, t] of state.trails) index?.older(id, t.events + (t.refusedHandshakes ?? 0));
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new TrajgateError('E_JOURNAL_CORRUPT', `snapshot state cannot be restored: ${why}`);
  }
}

/** The guard's part of a snapshot (sessions, operators' approvals and denies); replay seeds from it. */
export function restoreGuard(
  state: SnapshotState,
  guard: Guard,
  store: TrajectoryStore<unknown>,
): void {
  for (const [id, dump] of state.sessions) {
    const s = decodeSession(dump, `session ${JSON.stringify(id)}`);
    store.commit(id, {
      counted: Object.fromEntries(s.counts),
      pause: s.pausedAt === null ? null : { at: s.pausedAt, by: s.pausedBy },
      events: s.events,
      marks: [...s.marks.values()],
    });
    for (const pending of s.pending.values())
      store.commit(id, { counted: null, pause: null, pending });
    for (const [rid, { ts, bytes }] of s.sent) {
      const sent = { rid, ts, bytes, since: -Infinity };
      store.commit(id, { counted: null, pause: null, sent });
    }
  }
  for (const a of state.approvals) guard.approve({ ...a, origin: 'operator' });
  for (const d of state.denies) guard.addDeny({ ...d, origin: 'operator' });
}

/**
 * openJournal's options for the configured journal: rotation whose snapshot captures `parts`,
 * the chain on or off, and restoring a snapshot into `parts` at start.
 */
export function snapshotOptions(
  journal: RawJournal,
  parts: SnapshotParts & { readonly index?: SessionIndex; readonly recentEvents: number },
  warn: (message: string) => void,
): { rotate?: RotateOptions; chain: boolean; restore: (state: unknown) => void } {
  const { rotate: bytes, keep, keepFor, chain } = journal;
  const snapshot = () => captureState(parts);
  return {
    ...(bytes > 0 ? { rotate: { bytes, keep, keepFor, snapshot, warn } } : {}),
    chain,
    restore: (state) => restoreState(state, parts),
  };
}
