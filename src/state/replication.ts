import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { TrajgateError } from '../errors.js';
import type { Guard } from '../guard/guard.js';
import { unchained } from '../journal/chain.js';
import { currentNames, sharedSpelling } from '../journal/old-names.js';
import { applyRecord } from '../journal/rebuild.js';
import type { EventRecord, JournalRecord } from '../journal/records.js';
import type { Review } from '../review/review.js';
import type { Sessions } from '../review/sessions.js';
import type { RedisStore } from './redis-store.js';

/** The records other gateways must hear of: what a view shows, and operators' actions. */
const SHARED: ReadonlySet<string> = new Set([
  'event',
  'pause',
  'resume',
  'deny',
  'approve',
  'deny-pattern',
  'revoke',
  'topup',
]);

export interface ReplicationParts {
  readonly store: RedisStore<EventRecord>;
  /** A connection of its own: one that subscribes can send nothing else. */
  readonly subscriber: Redis;
  readonly guard: Guard;
  readonly review: Review;
  readonly sessions: Sessions;
  readonly log: Logger;
}

/**
 * What keeps gateways sharing a store in step beyond the state each decision reads: each
 * publishes the records it journals that the others must act on (a pause freezes tunnels
 * everywhere, a resume or deny releases held requests everywhere, approvals and deny patterns
 * apply everywhere, every view shows every session), after the store has what they changed.
 * Each gateway journals only what it did itself: its journal is its own audit trail.
 */
export class Replication {
  readonly #p: ReplicationParts;
  #loaded = false;
  /** Records shared so far, and those still on their way. */
  #written = 0;
  readonly #sharing = new Map<number, Promise<void>>();
  #started = false;
  /** Records from the bus are applied in the order they came. */
  #applying: Promise<void> = Promise.resolve();

  constructor(parts: ReplicationParts) {
    this.#p = parts;
    const { subscriber, store } = parts;
    subscriber.on('message', (_channel: string, text: string) => this.#receive(text));
    // Back after an outage: what changed meanwhile is read again.
    store.onRules(() => this.#syncRules());
    store.onReady(() => {
      if (this.#started) void this.#catchUp();
    });
  }

  /** Subscribes and reads what the store holds; a store down now is caught up with later. */
  async start(): Promise<void> {
    const { subscriber, store } = this.#p;
    await Promise.all([
      subscriber.connect().catch(() => undefined),
      store.connect().catch(() => undefined),
    ]);
    await subscriber.subscribe(store.keys.bus).catch(() => undefined);
    this.#started = true;
    await this.#catchUp();
  }

  /** A record this gateway journaled (onAppend): published once the store has its change. */
  written(record: JournalRecord): void {
    if (!SHARED.has(record.type)) return;
    const { store } = this.#p;
    const session = 'session' in record && typeof record.session === 'string' ? record.session : '';
    const line = record.type === 'event' ? JSON.stringify(unchained(record)) : null;
    // What others read of an event is its line (no chain); other records as journaled.
    const shared = sharedSpelling(record);
    const message = line ?? JSON.stringify(shared);
    const n = ++this.#written;
    // After the caller's own store writes, queued in this same tick (Sessions.resume etc.),
    // and before a decision's lease is released (its write carries the record).
    const sent = new Promise<void>((resolve, reject) =>
      queueMicrotask(() => {
        const rule =
          record.type === 'approve' || record.type === 'deny-pattern'
            ? store.commands.saveRule(record.id ?? `${record.type[0]}${record.seq}`, shared)
            : record.type === 'revoke'
              ? store.commands.dropRule(record.id)
              : null;
        const share = () => store.share(session, line, message);
        (rule === null ? share() : rule.then(share)).then(resolve, reject);
      }),
    );
    this.#sharing.set(n, sent);
    sent
      .catch((err: unknown) => this.#p.log.warn({ err }, 'state store: a record was not shared'))
      .finally(() => this.#sharing.delete(n));
  }

  /** How many records this gateway has shared or is sharing: a mark for `shared`. */
  mark(): number {
    return this.#written;
  }

  /**
   * Resolves once the records written after `mark` reached the other gateways; throws
   * E_STORE_DOWN if one did not (an operator's action is then answered 503: it was journaled
   * and applied here, and the others learn of it once the store answers again).
   */
  async shared(mark: number): Promise<void> {
    for (const [n, sharing] of [...this.#sharing]) {
      if (n <= mark) continue;
      await sharing.catch((err: unknown) => {
        const why = err instanceof Error ? err.message : String(err);
        throw new TrajgateError(
          'E_STORE_DOWN',
          `journaled and applied on this gateway, but not shared with the others yet (${why}); they learn of it once the store answers again`,
        );
      });
    }
  }

  /** A bus message: a gateway's name, then one record per line (its own come back, unread). */
  #receive(text: string): void {
    const { store } = this.#p;
    const cut = text.indexOf('\n');
    if (cut < 0 || text.slice(0, cut) === store.replica) return;
    let records: JournalRecord[];
    try {
      records = text
        .slice(cut + 1)
        .split('\n')
        .map((line) => currentNames(JSON.parse(line)) as JournalRecord);
    } catch {
      this.#p.log.warn('state store: a bus message is not JSON lines; ignored');
      return;
    }
    // One after the other: a resume must not overtake the pause before it.
    this.#applying = records.reduce(
      (before, record) => before.then(() => this.#apply(record)),
      this.#applying,
    );
  }

  async #apply(record: JournalRecord): Promise<void> {
    if (typeof record?.type !== 'string') return;
    const { store, review, sessions, guard } = this.#p;
    try {
      // A top-up changed the session's state in the store: the views here read it too.
      if (record.type === 'pause' || record.type === 'resume' || record.type === 'topup')
        await store.refresh(record.session);
      store.asRemote(() => review.restore(record));
      switch (record.type) {
        case 'pause':
          sessions.paused(record.session);
          return;
        case 'resume':
          sessions.resumedElsewhere(record);
          return;
        case 'deny':
          sessions.deniedElsewhere(record.session);
          return;
        case 'approve':
          applyRecord(guard, record);
          return;
        case 'deny-pattern':
          applyRecord(guard, record);
          sessions.rules.closeDenied();
          return;
        case 'revoke':
          guard.revoke(record.id);
          if (record.kind !== undefined) sessions.rules.closeUnapproved(record.id, record.by);
          return;
      }
    } catch (err) {
      this.#p.log.warn(
        { err, record: record.type },
        'state store: a shared record was not applied',
      );
    }
  }

  /** Makes this gateway's operator approvals and deny patterns those the store holds. */
  async #syncRules(): Promise<void> {
    const { store, guard } = this.#p;
    const rules = await store.commands.rules();
    const now = Date.now();
    for (const rule of guard.approvals.all(now)) {
      if (rule.origin === 'operator' && !(rule.id in rules)) guard.revoke(rule.id);
    }
    for (const rule of guard.denies.all(null, true)) {
      if (rule.origin === 'operator' && !(rule.id in rules)) guard.revoke(rule.id);
    }
    for (const [id, text] of Object.entries(rules)) {
      if (guard.approvals.byId(id, now) || guard.denies.byId(id)) continue;
      try {
        applyRecord(guard, currentNames(JSON.parse(text)) as JournalRecord);
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        throw new TrajgateError('E_STORE_CORRUPT', `${store.keys.rules} field ${id}: ${why}`);
      }
    }
  }

  /**
   * Reads the operators' rules, every session's state and, the first time, the sessions' recent
   * events; then acts on the pauses that changed meanwhile: requests held here and tunnels
   * frozen for sessions no longer paused are let go (a resume whose message was lost while the
   * store was down, or a store restored from an older dump), tunnels of sessions paused
   * meanwhile are frozen. A Redis restarted from a dump is the truth about every session this
   * gateway knows: one it does not hold starts at zero.
   */
  async #catchUp(): Promise<void> {
    const { store, review, sessions, log } = this.#p;
    try {
      const restarted = await store.restarted();
      await store.checkEpoch();
      // Emptied: nothing to read until a rebuild refills it (then this runs again).
      if (!store.health().up) return;
      await this.#syncRules();
      const mirror = [...store.sessions()].map(([id]) => id);
      const wasPaused = new Set(mirror.filter((id) => sessions.isPaused(id)));
      // All at once, not one round trip after another: a fleet has many sessions.
      const ids = await store.commands.knownSessions();
      const read = restarted ? [...new Set([...ids, ...mirror])] : ids;
      await Promise.all(read.map((id) => store.refresh(id)));
      const unseen = this.#loaded ? [] : ids.filter((id) => review.activity(id) === null);
      const recent = await Promise.all(unseen.map((id) => store.commands.recentOf(id)));
      store.asRemote(() => recent.flat().forEach((r) => review.restore(r as JournalRecord)));
      this.#loaded = true;
      const lifted = [...new Set([...sessions.holding(), ...wasPaused])].filter(
        (id) => !sessions.isPaused(id),
      );
      for (const id of lifted) sessions.resumedElsewhere({ session: id });
      for (const id of read) if (sessions.isPaused(id) && !wasPaused.has(id)) sessions.paused(id);
      if (restarted) {
        log.warn(
          { sessions: read.length, unpaused: lifted.length },
          'state store: Redis was restarted (its run_id changed); this gateway read every session again from it',
        );
      }
    } catch (err) {
      log.warn({ err }, 'state store: catching up failed; retried when it answers again');
    }
  }
}
