import type { Socket } from 'node:net';
import type { Event } from '../event/event.js';

/** What the owner of a running tunnel can do to it. */
export interface TunnelControl {
  /** Stops relaying both ways: nothing more is read, what was read is held. */
  freeze(): void;
  thaw(): void;
  close(reason: string): void;
}

/** Why a tunnel was admitted, and so what ends it. */
export interface Admission {
  readonly session: string;
  /** `host:port` as the CONNECT named it, or the upgraded URL. */
  readonly target: string;
  /** The request id of the tunnel's event (null: judged request by request inside). */
  readonly rid: number | null;
  /** When the approval that admitted it expires (ms since the epoch), or null. */
  readonly expiresAt: number | null;
  /** The event that opened it, or null: a tunnel read or intercepted is judged per request. */
  readonly event: Event | null;
  /** Whether an approval admitted it (rather than a verdict of the policy). */
  readonly approved: boolean;
}

export type TunnelChange = 'frozen' | 'thawed' | 'closed';

/** Journals a change before it takes effect; false when the journal failed. */
export type TunnelRecorder = (
  admission: Admission,
  change: TunnelChange,
  reason: string,
) => boolean;

interface Entry {
  readonly admission: Admission;
  readonly control: TunnelControl;
  frozen: boolean;
  holdTimer: NodeJS.Timeout | null;
  expiryTimer: NodeJS.Timeout | null;
}

/** setTimeout's longest delay; a later expiry re-arms. */
const MAX_DELAY = 2 ** 31 - 1;

/**
 * Open tunnels (CONNECT, upgrades, intercepted and inspected connections) by session. A
 * decision to open one covers it only while the session is active and its approval valid
 * (README: open tunnels follow their session): a pause freezes them, resume thaws them, deny and the
 * hold timeout close them, and one admitted by an approval closes when the approval expires.
 * Every change is journaled against the tunnel first; a thaw that cannot be journaled closes.
 */
export class LiveTunnels {
  readonly #bySession = new Map<string, Set<Entry>>();

  constructor(
    private holdTimeoutMs: number,
    private readonly record: TunnelRecorder,
  ) {}

  /** A config reload's `policy.holdTimeout`, for tunnels frozen from now on. */
  setHoldTimeout(ms: number): void {
    this.holdTimeoutMs = ms;
  }

  /** Tracks a running tunnel, frozen at once when its session is paused; returns untrack. */
  add(admission: Admission, control: TunnelControl, paused: boolean): () => void {
    const entry: Entry = { admission, control, frozen: false, holdTimer: null, expiryTimer: null };
    let set = this.#bySession.get(admission.session);
    if (set === undefined) this.#bySession.set(admission.session, (set = new Set()));
    set.add(entry);
    if (admission.expiresAt !== null) this.#armExpiry(entry, admission.expiresAt);
    if (paused) this.#freeze(entry);
    return () => {
      clearTimeout(entry.holdTimer ?? undefined);
      clearTimeout(entry.expiryTimer ?? undefined);
      if (!set.delete(entry) || set.size > 0) return;
      if (this.#bySession.get(admission.session) === set) this.#bySession.delete(admission.session);
    };
  }

  /** Open tunnels of a session (all sessions when omitted). */
  count(session?: string): number {
    if (session !== undefined) return this.#bySession.get(session)?.size ?? 0;
    let n = 0;
    for (const set of this.#bySession.values()) n += set.size;
    return n;
  }

  paused(session: string): void {
    for (const entry of this.#entries(session)) this.#freeze(entry);
  }

  resumed(session: string): void {
    for (const entry of this.#entries(session)) {
      if (!entry.frozen) continue;
      if (!this.record(entry.admission, 'thawed', 'session resumed by an operator')) {
        this.#close(entry, 'the journal cannot be written, so the tunnel is not resumed');
        continue;
      }
      clearTimeout(entry.holdTimer ?? undefined);
      entry.holdTimer = null;
      entry.frozen = false;
      entry.control.thaw();
    }
  }

  denied(session: string): void {
    for (const entry of this.#entries(session)) this.#close(entry, 'denied by an operator');
  }

  /**
   * Closes the tunnels that `why` gives a reason for (an approval revoked, a reload that no
   * longer allows them); returns how many.
   */
  closeWhere(why: (admission: Admission) => string | null): number {
    let closed = 0;
    for (const set of [...this.#bySession.values()]) {
      for (const entry of [...set]) {
        const reason = why(entry.admission);
        if (reason === null) continue;
        this.#close(entry, reason);
        closed++;
      }
    }
    return closed;
  }

  /** Closes every tunnel, each journaled with `reason` (a stop's drain deadline). */
  closeAll(reason: string): void {
    for (const set of [...this.#bySession.values()]) {
      for (const entry of [...set]) this.#close(entry, reason);
    }
  }

  #entries(session: string): Entry[] {
    return [...(this.#bySession.get(session) ?? [])];
  }

  #freeze(entry: Entry): void {
    if (entry.frozen) return;
    entry.frozen = true;
    // Frozen first: stopping a tunnel needs no permission, only a record.
    entry.control.freeze();
    this.record(entry.admission, 'frozen', 'session paused');
    entry.holdTimer = setTimeout(
      () =>
        this.#close(entry, `no operator decided within the hold time (${this.holdTimeoutMs} ms)`),
      this.holdTimeoutMs,
    );
  }

  #close(entry: Entry, reason: string): void {
    this.record(entry.admission, 'closed', reason);
    entry.control.close(reason);
  }

  #armExpiry(entry: Entry, expiresAt: number): void {
    const delay = expiresAt - Date.now();
    if (delay <= 0) {
      this.#close(entry, 'the approval that admitted it expired');
      return;
    }
    entry.expiryTimer = setTimeout(
      () => this.#armExpiry(entry, expiresAt),
      Math.min(delay, MAX_DELAY),
    );
  }
}

/**
 * Control of a connection whose HTTP trajgate reads itself (intercepted TLS, inspected plain
 * HTTP). Node's HTTP server pauses and resumes its sockets for its own flow control, so while
 * frozen a resume from it is ignored; corked, responses in flight stop reaching the agent.
 */
export function socketControl(socket: Socket): TunnelControl {
  let frozen = false;
  const resume = socket.resume;
  socket.resume = function (this: Socket) {
    return frozen ? this : resume.call(this);
  };
  return {
    freeze: () => {
      if (frozen) return;
      frozen = true;
      socket.pause();
      socket.cork();
    },
    thaw: () => {
      if (!frozen) return;
      frozen = false;
      socket.uncork();
      resume.call(socket);
    },
    close: () => socket.destroy(),
  };
}
