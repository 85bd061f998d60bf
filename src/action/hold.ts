/** Whether the client of a request still waits. */
export interface Presence {
  readonly gone: boolean;
  /** Calls `fn` once when the client goes away; returns a function that cancels that. */
  onGone(fn: () => void): () => void;
}

/** How a held request was let go (`once`: resumed, and forwarded as approved this once). */
export type Release = 'resume' | 'once' | 'deny' | 'timeout' | 'gone' | 'shutdown' | 'credentials';

/** A request held open because its session is paused. */
export interface Held {
  readonly id: number;
  readonly session: string;
  /** `GET http://host/path` or `CONNECT host:443`: what the agent asked for. */
  readonly what: string;
  /** The request's id: the seq of its first event record. */
  readonly rid: number;
  /** The request body's size (its Content-Length) when known. */
  readonly bytes: number | null;
  readonly since: number;
  readonly deadline: number;
}

/** How many ended holds are remembered (a map of small numbers). */
const ENDED = 4096;

interface Entry extends Held {
  settle(release: Release): void;
}

/**
 * The requests held open while their sessions are paused: the third thing a ruling can lead to,
 * beside forwarding and refusing. A held request waits here until an operator's decision, the
 * hold time or its client's leaving lets it go; what follows (judged again, refused) is the
 * caller's.
 */
export class HeldRequests {
  readonly #bySession = new Map<string, Set<Entry>>();
  /** How the latest holds ended, by rid (a decision link asks whether its request was let go). */
  readonly #ended = new Map<number, Release>();
  /**
   * Per session, how many times its held requests were let go all at once (resume, deny,
   * shutdown, …) and how the last time did: a request decided before it and held after it
   * (its decision awaited the shared store meanwhile) is let go the same way (`hold`'s `since`).
   */
  readonly #releases = new Map<string, { readonly epoch: number; readonly release: Release }>();
  /** Who waits for a released request to be judged again (a resume reports the verdicts). */
  readonly #rejudged = new Map<number, Set<() => void>>();
  #timeoutMs: number;
  #nextId = 1;
  /** Requests held now, across all sessions. */
  #count = 0;

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
  }

  /** A config reload's `policy.holdTimeout`, for requests held from now on. */
  setTimeout(ms: number): void {
    this.#timeoutMs = ms;
  }

  /** How many times the session's held requests were let go all at once (see `hold`). */
  epoch(session: string): number {
    return this.#releases.get(session)?.epoch ?? 0;
  }

  /**
   * Waits until `release` lets the request go, the hold times out, or the client leaves.
   * `since`: the session's epoch when the request's decision began; a release since then lets
   * it go at once, the same way.
   */
  hold(
    info: { session: string; what: string; rid: number; bytes?: number | null },
    client: Presence,
    since?: number,
  ): Promise<Release> {
    const missed = this.#releases.get(info.session);
    if (since !== undefined && missed !== undefined && missed.epoch > since) {
      this.#ended.set(info.rid, missed.release);
      return Promise.resolve(missed.release);
    }
    return new Promise((resolve) => {
      const since = Date.now();
      const set = this.#bySession.get(info.session) ?? new Set<Entry>();
      this.#bySession.set(info.session, set);
      const entry: Entry = {
        ...info,
        bytes: info.bytes ?? null,
        id: this.#nextId++,
        since,
        deadline: since + this.#timeoutMs,
        settle: (release) => {
          if (!set.delete(entry)) return;
          this.#count--;
          this.#ended.set(info.rid, release);
          if (this.#ended.size > ENDED) this.#ended.delete(this.#ended.keys().next().value!);
          clearTimeout(timer);
          cancel();
          if (set.size === 0 && this.#bySession.get(info.session) === set)
            this.#bySession.delete(info.session);
          resolve(release);
        },
      };
      const timer = setTimeout(() => entry.settle('timeout'), this.#timeoutMs);
      set.add(entry);
      this.#count++;
      const cancel = client.onGone(() => entry.settle('gone'));
    });
  }

  /** How the hold of request `rid` ended, while among the latest ENDED; undefined if unknown. */
  ended(rid: number): Release | undefined {
    return this.#ended.get(rid);
  }

  /** Requests held across all sessions (kept as they come and go: a scrape scans none). */
  count(): number {
    return this.#count;
  }

  of(session: string): Held[] {
    return [...(this.#bySession.get(session) ?? [])];
  }

  /** Whether the session has a request held. */
  holds(session: string): boolean {
    return this.#bySession.has(session);
  }

  /** An evicted session (nothing held): its release epoch goes; none of its decisions runs. */
  forget(session: string): void {
    if (!this.#bySession.has(session)) this.#releases.delete(session);
  }

  /** Sessions with requests held. */
  sessions(): string[] {
    return [...this.#bySession.keys()];
  }

  /**
   * Lets every request the session holds go, those whose rid is in `once` as `once` (approved
   * this once) and the others as `release`; returns what went, in the order they were held.
   */
  release(session: string, release: Release): Held[] {
    this.#releases.set(session, { epoch: this.epoch(session) + 1, release });
    const entries = [...(this.#bySession.get(session) ?? [])];
    for (const entry of entries) entry.settle(release);
    return entries;
  }

  /**
   * Approve once: lets the held requests `rids` go, to be forwarded as approved; every other
   * stays held (its session stays paused). Returns those let go.
   */
  releaseOnce(session: string, rids: ReadonlySet<number>): Held[] {
    const named = [...(this.#bySession.get(session) ?? [])].filter((e) => rids.has(e.rid));
    for (const entry of named) entry.settle('once');
    return named;
  }

  /** The caller of `hold` judged request `rid` again after its release. */
  judgedAgain(rid: number): void {
    const waiting = this.#rejudged.get(rid);
    this.#rejudged.delete(rid);
    for (const done of waiting ?? []) done();
  }

  /**
   * Resolves once every request of `rids` (just released) was judged again, or after `ms`:
   * so a resume can say whether what it let go paused the session again at once.
   */
  afterJudged(rids: readonly number[], ms: number): Promise<void> {
    if (rids.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      let left = rids.length;
      const dones: [number, () => void][] = [];
      const finish = () => {
        clearTimeout(timer);
        for (const [rid, done] of dones) this.#rejudged.get(rid)?.delete(done);
        for (const [rid] of dones)
          if (this.#rejudged.get(rid)?.size === 0) this.#rejudged.delete(rid);
        resolve();
      };
      const timer = setTimeout(finish, ms);
      for (const rid of rids) {
        const done = () => {
          if (--left === 0) finish();
        };
        dones.push([rid, done]);
        const set = this.#rejudged.get(rid) ?? new Set();
        set.add(done);
        this.#rejudged.set(rid, set);
      }
    });
  }

  /** Lets every held request go (the gateway is stopping). */
  releaseAll(): void {
    for (const session of [...this.#bySession.keys()]) this.release(session, 'shutdown');
  }
}
