import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import type { TrajectoryStore } from '../guard/store.js';
import { MemoryStore } from '../guard/store.js';
import { unchained } from '../journal/chain.js';
import type {
  CredentialUseView,
  EventRecord,
  JournalRecord,
  PauseRecord,
} from '../journal/records.js';
import type { ToolChangeView } from '../wire.js';
import { noteCredentials } from './credential-uses.js';
import type { HandshakeView } from './handshakes.js';
import { refusedHandshake } from './handshakes.js';

/** What a session did lately, for pause records, the API and the review page. */
interface Trail {
  lastActivity: number;
  events: number;
  pause: PauseRecord | null;
  /** REVIEWs since the last operator action on the session (the newest FLAGS kept). */
  flags: EventRecord[];
  flagged: number;
  /** Per sequence rule, the latest event that set its mark (`marks`): the pair's first half. */
  marked: Map<string, EventRecord> | null;
  /** The newest PENDING events that mark only if they fail (`onFailure`), as the guard's. */
  pending: EventRecord[] | null;
  /** TLS handshakes the agent refused: how many, and the newest FLAGS. */
  refusedHandshakes: number;
  handshakes: HandshakeView[];
  /** Credentials its traffic carried, by name (credential-uses.ts). */
  credentials: Map<string, CredentialUseView> | null;
}

/** A trail as a journal snapshot holds it. */
export interface TrailState {
  readonly lastActivity: number;
  readonly events: number;
  readonly pause: PauseRecord | null;
  readonly flags: EventRecord[];
  readonly flagged: number;
  readonly marked: [string, EventRecord][] | null;
  readonly pending: EventRecord[] | null;
  /** Absent in snapshots from before refused handshakes were kept. */
  readonly refusedHandshakes?: number;
  readonly handshakes?: HandshakeView[];
  readonly credentials?: [string, CredentialUseView][] | null;
}

/** REVIEW events a flagged session keeps for operators (its count goes on). */
const FLAGS = 20;

/** Events waiting for their outcome that the guard keeps (guard's pending bound). */
const PENDING = 64;

/** Operator actions on a session that answer its REVIEWs. */
const ANSWERS: ReadonlySet<string> = new Set([
  'approve',
  'resume',
  'deny',
  'deny-pattern',
  'topup',
]);

export type PauseListener = (record: PauseRecord) => void;
export type ReviewListener = (event: EventRecord) => void;
/** A session's trail changed (activity, flags, pause): the sessions list places it again. */
export type ChangeListener = (session: string) => void;

/**
 * The operator's view of the trajectory: each session's latest events (a ring of
 * `policy.recentEvents`, kept in the store the guard's state is in), and the pause record
 * built when a session pauses (the pipeline journals it before it is announced). Rebuilt from
 * the journal like the guard.
 */
export class Review {
  readonly #trails = new Map<string, Trail>();
  readonly #store: TrajectoryStore<EventRecord>;
  readonly #size: number;
  readonly #log: Logger;
  readonly #onPause: PauseListener[] = [];
  readonly #onReview: ReviewListener[] = [];
  readonly #onChange: ChangeListener[] = [];
  /** The change of a pending tool list, for a pause on it (gateway/tool-pin-state.ts). */
  toolChange: ((server: string, digest: string) => ToolChangeView | undefined) | null = null;

  constructor(
    config: { readonly policy: Pick<Config['policy'], 'recentEvents'> },
    log: Logger,
    store: TrajectoryStore<EventRecord> = new MemoryStore(),
  ) {
    this.#store = store;
    this.#size = config.policy.recentEvents;
    this.#log = log;
  }

  onPause(listener: PauseListener): void {
    this.#onPause.push(listener);
  }

  onReview(listener: ReviewListener): void {
    this.#onReview.push(listener);
  }

  onChange(listener: ChangeListener): void {
    this.#onChange.push(listener);
  }

  /** Every event record, as it is journaled or read back (kept as it is, not copied). */
  observe(record: EventRecord, ms = Date.parse(record.ts)): void {
    const trail = this.#trail(record.session);
    this.#store.remember(record.session, record, this.#size);
    trail.lastActivity = ms;
    trail.events++;
    if (record.marks?.length || record.onFailure?.length) marking(trail, record);
    trail.credentials = noteCredentials(trail.credentials, record);
    if (record.verdict === 'REVIEW' && record.held !== true) {
      trail.flags.push(record);
      if (trail.flags.length > FLAGS) trail.flags.shift();
      trail.flagged++;
      this.#emit(this.#onReview, record);
    }
  }

  /**
   * Every journal record as it is written or read back (the writer's `onAppend`): the TLS
   * handshakes a session's agent refused are kept for the API and the page.
   */
  noteHandshake(record: { readonly type: string }, seq: number, ts?: string): void {
    // Two records a request pass here: only a refusal reads the clock (toISOString per record
    // was ~1 % of a keep-alive request's CPU in the profile).
    if (record.type !== 'refusal') return;
    const at = (record as { ts?: string }).ts ?? ts ?? new Date().toISOString();
    const found = refusedHandshake(record, seq, at);
    if (found === null) return;
    const { session, view } = found;
    const trail = this.#trail(session);
    trail.lastActivity = Math.max(trail.lastActivity, Date.parse(view.ts));
    trail.refusedHandshakes++;
    trail.handshakes.push(view);
    if (trail.handshakes.length > FLAGS) trail.handshakes.shift();
  }

  /** Credentials the session's traffic carried, in the order first seen. */
  credentials(session: string): CredentialUseView[] {
    return [...(this.#trails.get(session)?.credentials?.values() ?? [])];
  }

  /** TLS handshakes the session's agent refused: how many, and the newest FLAGS, oldest first. */
  handshakes(session: string): { refused: number; recent: HandshakeView[] } {
    const trail = this.#trails.get(session);
    return { refused: trail?.refusedHandshakes ?? 0, recent: [...(trail?.handshakes ?? [])] };
  }

  /** An operator acted on the session (approve, resume, deny, deny pattern): not flagged now. */
  answered(session: string): void {
    const trail = this.#trails.get(session);
    if (!trail) return;
    trail.flags = [];
    trail.flagged = 0;
    this.#emit(this.#onChange, session);
  }

  /** REVIEWs since the last operator action: how many, and the newest FLAGS, oldest first. */
  flags(session: string): { flagged: number; reviews: EventRecord[] } {
    const trail = this.#trails.get(session);
    return { flagged: trail?.flagged ?? 0, reviews: [...(trail?.flags ?? [])] };
  }

  /**
   * The pause record of a session pausing on `trigger`, which is not yet observed: built
   * before anything is written, changing nothing.
   */
  pauseFor(trigger: EventRecord, held: PauseRecord['held']): PauseRecord {
    const recent = [...this.#store.recent(trigger.session), trigger];
    const seq = trigger.rule?.after;
    const after = seq === undefined ? undefined : this.earlier(trigger.session, seq, recent);
    const out = trigger.exfiltration?.credential;
    const first =
      out === undefined
        ? undefined
        : this.credentials(trigger.session).find((c) => c.name === out)?.first;
    const firstSeen =
      first === undefined ? undefined : (recent.find((e) => e.seq === first.seq) ?? first);
    const shown = trigger.toolChange;
    const toolChange = shown && this.toolChange?.(shown.server, shown.digest);
    return {
      session: trigger.session,
      pausedAt: trigger.ts,
      boundary: trigger.boundary,
      count: trigger.count,
      reason: trigger.reason,
      trigger,
      recent: recent.slice(-this.#size),
      held,
      restored: false,
      ...(after ? { after } : {}),
      ...(firstSeen ? { firstSeen: firstSeen as EventRecord } : {}),
      ...(toolChange ? { toolChange } : {}),
    };
  }

  /**
   * The earlier event of a sequence rule's pair (a decision's `rule.after`): among the recent
   * events and those that set or may set a mark. Undefined when no longer kept.
   */
  earlier(
    session: string,
    seq: number,
    recent: readonly EventRecord[] = this.#store.recent(session),
  ): EventRecord | undefined {
    const trail = this.#trails.get(session);
    const bySeq = (e: EventRecord) => e.seq === seq;
    return (
      recent.find(bySeq) ??
      [...(trail?.marked?.values() ?? [])].find(bySeq) ??
      trail?.pending?.find(bySeq)
    );
  }

  /** A pause record is journaled: kept for operators, and listeners (webhook, metrics) told. */
  announce(record: PauseRecord): void {
    this.#trail(record.session).pause = record;
    this.#emit(this.#onPause, record);
  }

  /**
   * Rebuild: event records refill the rings, pause records come back (held requests lost),
   * operator actions on a session clear its flags.
   */
  restore(record: JournalRecord): void {
    if (ANSWERS.has(record.type)) {
      const { session } = record as { session?: string | null };
      if (typeof session === 'string') this.answered(session);
    }
    if (record.type === 'event') {
      this.observe(unchained(record));
    } else if (record.type === 'pause') {
      const { seq: _seq, ts: _ts, type: _type, ...pause } = unchained(record);
      this.#trail(record.session).pause = { ...pause, restored: true };
    } else if (record.type === 'evict') {
      this.forget(record.session);
    } else if (record.type === 'resume' && !Array.isArray(record.once)) {
      // An approve-once (its rids named) leaves the session paused, and its pause record too.
      const trail = this.#trails.get(record.session);
      if (trail) trail.pause = null;
      this.#emit(this.#onChange, record.session);
    }
  }

  /** Every session's trail, JSON-ready (tests and tools compare whole states with it). */
  trails(): [string, TrailState][] {
    return [...this.#trails.keys()].map((session) => [session, this.trail(session) as TrailState]);
  }

  /** One session's trail for a journal snapshot's part (review/snapshot.ts), JSON-ready. */
  trail(session: string): TrailState | null {
    const t = this.#trails.get(session);
    if (t === undefined) return null;
    return {
      lastActivity: t.lastActivity,
      events: t.events,
      pause: t.pause,
      flags: t.flags,
      flagged: t.flagged,
      marked: t.marked === null ? null : [...t.marked],
      pending: t.pending,
      refusedHandshakes: t.refusedHandshakes,
      handshakes: t.handshakes,
      credentials: t.credentials === null ? null : [...t.credentials],
    };
  }

  /** Trails from a snapshot: as `restore` would have left them (a pause is one read back). */
  restoreTrails(trails: readonly (readonly [string, TrailState])[]): void {
    for (const [session, t] of trails) {
      this.#trails.set(session, {
        ...t,
        pause: t.pause === null ? null : { ...t.pause, restored: true },
        flags: [...t.flags],
        marked: t.marked === null ? null : new Map(t.marked),
        pending: t.pending === null ? null : [...t.pending],
        refusedHandshakes: t.refusedHandshakes ?? 0,
        handshakes: [...(t.handshakes ?? [])],
        credentials: t.credentials ? new Map(t.credentials) : null,
      });
      this.#emit(this.#onChange, session);
    }
  }

  /** An evict record: the session's trail goes (its recent events go with the guard's state). */
  forget(session: string): void {
    this.#trails.delete(session);
    // The sessions list drops it once nothing else knows it (placed after this turn).
    this.#emit(this.#onChange, session);
  }

  /** Sessions with a trail: what the views list. */
  get size(): number {
    return this.#trails.size;
  }

  resumed(session: string): void {
    const trail = this.#trails.get(session);
    if (trail) trail.pause = null;
    this.#emit(this.#onChange, session);
  }

  recent(session: string): EventRecord[] {
    return [...this.#store.recent(session)];
  }

  pauseRecord(session: string): PauseRecord | null {
    return this.#trails.get(session)?.pause ?? null;
  }

  /** What the sessions list shows of the trail (no copies: read per row). */
  activity(session: string): { lastActivity: number; events: number; flagged: number } | null {
    const trail = this.#trails.get(session);
    return trail
      ? { lastActivity: trail.lastActivity, events: trail.events, flagged: trail.flagged }
      : null;
  }

  sessions(): IterableIterator<string> {
    return this.#trails.keys();
  }

  /** The session's trail (made when new), about to change. */
  #trail(session: string): Trail {
    this.#emit(this.#onChange, session);
    let trail = this.#trails.get(session);
    if (!trail) {
      trail = {
        lastActivity: 0,
        events: 0,
        pause: null,
        flags: [],
        flagged: 0,
        marked: null,
        pending: null,
        refusedHandshakes: 0,
        handshakes: [],
        credentials: null,
      };
      this.#trails.set(session, trail);
    }
    return trail;
  }

  #emit<T>(listeners: ((value: T) => void)[], value: T): void {
    for (const listener of listeners) {
      try {
        listener(value);
      } catch (err) {
        this.#log.error({ err }, 'review listener failed');
      }
    }
  }
}

/** Keeps an event that set (or may set, on failure) a sequence rule's mark. */
function marking(trail: Trail, record: EventRecord): void {
  for (const rule of record.marks ?? []) (trail.marked ??= new Map()).set(rule, record);
  if (!record.onFailure?.length) return;
  const pending = (trail.pending ??= []);
  pending.push(record);
  if (pending.length > PENDING) pending.shift();
}
