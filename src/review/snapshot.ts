import type { RawJournal } from '../config/journal-schema.js';
import { TrajgateError } from '../errors.js';
import type { Guard } from '../guard/guard.js';
import type { TrajectoryStore } from '../guard/store.js';
import type { EncodedSession } from '../guard/state-codec.js';
import { decodeSession, encodeSession } from '../guard/state-codec.js';
import type { EventRecord, JournalRecord, Unstamped } from '../journal/records.js';
import type { RotateOptions } from '../journal/rotate.js';
import type { SnapshotSource } from '../journal/snapshot-build.js';
import type { SessionIndex } from '../journal/session-index.js';
import type { ToolPinsDump } from './tool-pins-dump.js';
import type { Denials } from './pause-ends.js';
import type { Review, TrailState } from './review.js';

/**
 * What a snapshot holds: everything a restart rebuilds from the journal, as plain JSON, in
 * version 1's form (one record); version 2 writes it a session at a time (SessionPart) and
 * `snapshotState` reads it back into this form. Restoring it and then applying the lines after
 * it ends in the state a replay of the whole history gives (journal-rotation tests check this).
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
  /** Credentials an operator revoked (absent in older snapshots: none). */
  readonly revokedCredentials?: string[];
  /** Pinned tool lists, pending ones, sessions shown one (absent: none seen). */
  readonly toolPins?: ToolPinsDump;
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

/** The credentials' revokes, as a snapshot holds them (gateway/credentials.ts). */
export interface RevokedCredentials {
  readonly revoked: ReadonlySet<string>;
  apply(record: { readonly name: string; readonly action: 'revoke' }): void;
}

/** The parts whose state a snapshot holds. */
export interface SnapshotParts {
  readonly guard: Guard;
  readonly store: TrajectoryStore<EventRecord>;
  readonly review: Review;
  readonly denials: Denials;
  /** Absent where nothing runs credentials (replay, tools comparing states). */
  readonly credentials?: RevokedCredentials;
  /** Absent where nothing pins tools (replay). */
  readonly toolPins?: { dump(): ToolPinsDump; restore(dump: ToolPinsDump): void };
}

/** What a snapshot holds of one session: a version 2 part line's fields. */
export interface SessionPart {
  readonly guard?: EncodedSession;
  readonly trail?: TrailState;
  /** The session's recent events (with a trail, as version 1 kept them). */
  readonly recent?: EventRecord[];
  /** Its last deny's seq. */
  readonly denial?: number;
}

/** What a version 2 head's state holds, with its parts as the journal reader gathers them. */
interface PartsState {
  readonly approvals: ApprovalDump[];
  readonly denies: DenyDump[];
  readonly revokedCredentials?: string[];
  readonly toolPins?: ToolPinsDump;
  readonly parts: [string, SessionPart][];
}

/**
 * The journal's snapshot source (journal/snapshot-build.ts): sessions in the guard's order
 * (then those only the review or the denials know: the builder writes each once), each one's
 * part as of when it is asked.
 */
export function snapshotSource(parts: SnapshotParts): SnapshotSource {
  const { guard, store, review, denials } = parts;
  const shared = guard.shared;
  return {
    sessions: function* () {
      for (const [id] of guard.sessions()) yield id;
      yield* review.sessions();
      yield* denials.sessions();
    },
    part: (id) => {
      const s = guard.session(id);
      const trail = review.trail(id);
      const denial = denials.lastSeq(id);
      if (s === undefined && trail === null && denial === 0) return null;
      return {
        ...(s === undefined ? {} : { guard: encodeSession(s) }),
        ...(trail === null ? {} : { trail, recent: [...store.recent(id)] }),
        ...(denial === 0 ? {} : { denial }),
      };
    },
    head: () => headState(parts),
    touches,
    ...(shared ? { onChange: (listener) => shared.onRefreshed(listener) } : {}),
  };
}

/** Records that change what only the head holds (operators' rules), or nothing a snapshot holds. */
const HEAD_ONLY = new Set(['approve', 'deny-pattern', 'revoke', 'credential', 'refusal', 'tools']);

/** The session a record changes; a record of no session and of a kind not known: any session. */
function touches(
  record: Unstamped<JournalRecord>,
): { session: string; gone: boolean } | 'all' | null {
  const { session } = record as { session?: unknown };
  if (typeof session === 'string') return { session, gone: record.type === 'evict' };
  return HEAD_ONLY.has(record.type) ? null : 'all';
}

/**
 * Operators' approvals, deny patterns and credential revokes, and the tool pins: a snapshot's
 * head (config ones come from the config).
 */
function headState({ guard, credentials, toolPins }: SnapshotParts): {
  approvals: ApprovalDump[];
  denies: DenyDump[];
  revokedCredentials?: string[];
  toolPins?: ToolPinsDump;
} {
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
  const revoked = [...(credentials?.revoked ?? [])];
  const pins = toolPins?.dump();
  return {
    approvals,
    denies,
    ...(revoked.length > 0 ? { revokedCredentials: revoked } : {}),
    ...(pins !== undefined && pins.servers.length > 0 ? { toolPins: pins } : {}),
  };
}

/** The whole state as a snapshot takes it, at once (tests and tools compare states with it). */
export function captureState(parts: SnapshotParts): SnapshotState {
  const source = snapshotSource(parts);
  const all = new Map<string, SessionPart>();
  for (const id of source.sessions()) if (!all.has(id)) all.set(id, source.part(id) as SessionPart);
  return snapshotState({ ...headState(parts), parts: [...all] });
}

/**
 * A snapshot record's state in version 1's form: as it is (version 1), or from the head's
 * state and the parts the journal reader gathered (version 2), sessions in the order they
 * first appear among the parts.
 */
export function snapshotState(value: unknown): SnapshotState {
  const v2 = value as PartsState;
  if (typeof value !== 'object' || value === null || !Array.isArray(v2.parts))
    return value as SnapshotState;
  const { approvals, denies, parts, revokedCredentials, toolPins } = v2;
  const state: SnapshotState = {
    sessions: [],
    approvals,
    denies,
    trails: [],
    recent: [],
    denials: [],
    ...(revokedCredentials === undefined ? {} : { revokedCredentials }),
    ...(toolPins === undefined ? {} : { toolPins }),
  };
  for (const [id, part] of parts) {
    if (part.guard !== undefined) state.sessions.push([id, part.guard]);
    if (part.trail !== undefined) state.trails.push([id, part.trail]);
    if (part.trail !== undefined) state.recent.push([id, part.recent ?? []]);
    if (part.denial !== undefined) state.denials.push([id, part.denial]);
  }
  return state;
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
  const state = snapshotState(value);
  const lists = ['sessions', 'approvals', 'denies', 'trails', 'recent', 'denials'] as const;
  if (typeof state !== 'object' || state === null || lists.some((k) => !Array.isArray(state[k])))
    throw new TrajgateError('E_JOURNAL_CORRUPT', `snapshot state lacks one of ${lists.join(', ')}`);
  if (state.revokedCredentials !== undefined && !Array.isArray(state.revokedCredentials))
    throw new TrajgateError('E_JOURNAL_CORRUPT', 'snapshot state has a bad revokedCredentials');
  const { guard, store, review, denials, index } = parts;
  try {
    restoreGuard(state, guard, store);
    review.restoreTrails(state.trails);
    for (const [id, records] of state.recent)
      for (const r of records) store.remember(id, r, parts.recentEvents);
    denials.restore(state.denials);
    for (const name of state.revokedCredentials ?? [])
      parts.credentials?.apply({ name, action: 'revoke' });
    if (state.toolPins !== undefined) parts.toolPins?.restore(state.toolPins);
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
    for (const [name, { start, used, extra, hosts }] of s.budgets) {
      const steps = [...(hosts ?? [])].map((host) => ({ start, used, extra, host }));
      for (const step of [{ start, used, extra }, ...steps])
        store.commit(id, { counted: null, pause: null, budgeted: { [name]: step } });
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
  const snapshot = snapshotSource(parts);
  return {
    ...(bytes > 0 ? { rotate: { bytes, keep, keepFor, snapshot, warn } } : {}),
    chain,
    restore: (state) => restoreState(state, parts),
  };
}
