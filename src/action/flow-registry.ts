import type { Socket } from 'node:net';
import type { Basis, FlowControl, FlowRecorder } from './flows.js';
import { Flow } from './flows.js';

/** setTimeout's longest delay; a later expiry re-arms. */
const MAX_DELAY = 2 ** 31 - 1;

/**
 * Every live flow (requests, CONNECTs, upgrades, read tunnels) by session, from its judgement
 * to its last byte (docs/proxy.md: every channel is a flow that follows its session). A pause freezes
 * a session's flows, resume thaws them, deny and the hold timeout close them, one admitted by an
 * approval closes when it expires, and `closeWhere` closes those whose basis no longer holds
 * (pipeline/flow-basis). Every change is journaled against the flow first; a thaw that cannot be
 * journaled closes.
 */
export class FlowRegistry {
  readonly #bySession = new Map<string, SessionFlows>();
  /** Requests being judged, by session: no flow yet while a lookup or a lease is awaited. */
  readonly #judging = new Map<string, number>();
  #generation = 0;
  /** Told of a flow's bytes sent up while it runs (set by the pipeline: volume rules). */
  onSent: ((flow: Flow) => void) | null = null;
  readonly #report = (flow: Flow): void => this.onSent?.(flow);

  constructor(
    private holdTimeoutMs: number,
    private readonly record: FlowRecorder,
    private readonly isPaused: (session: string) => boolean,
  ) {}

  /**
   * Moves with every judgement of what still holds (`closeWhere`: a revoke, a deny, a reload):
   * a flow registered at the generation its decision saw has nothing to catch up on.
   */
  get generation(): number {
    return this.#generation;
  }

  /** A config reload's `policy.holdTimeout`, for flows frozen from now on. */
  setHoldTimeout(ms: number): void {
    this.holdTimeoutMs = ms;
  }

  /**
   * Registers a flow just judged, frozen at once when its session is paused by now — unless an
   * operator approved its event once (approve-once forwards what it names while the session
   * stays paused; a later pause freezes it like any other).
   */
  open(basis: Basis): Flow {
    const flow = new Flow(basis, basis.event === null ? null : this.#report, this.#end);
    let list = this.#bySession.get(basis.session);
    if (list === undefined) this.#bySession.set(basis.session, (list = new SessionFlows()));
    list.add(flow);
    if (basis.expiresAt !== null) this.#armExpiry(flow, basis.expiresAt);
    if (basis.event?.approved !== true && this.isPaused(basis.session)) this.#freeze(flow);
    return flow;
  }

  readonly #end = (flow: Flow): void => {
    if (flow.holdTimer !== null) clearTimeout(flow.holdTimer);
    if (flow.expiryTimer !== null) clearTimeout(flow.expiryTimer);
    const session = flow.basis.session;
    const list = this.#bySession.get(session);
    if (list === undefined || !list.remove(flow) || list.size > 0) return;
    this.#bySession.delete(session);
  };

  /** Whether the session has a live flow. */
  has(session: string): boolean {
    return this.#bySession.has(session);
  }

  /**
   * Runs `judge` (a request's judgement, to its ruling) with the session counted as judging:
   * the caller opens the ruling's flow, holds or refuses it in the same turn it settles.
   */
  async judging<T>(session: string, judge: () => Promise<T>): Promise<T> {
    this.#judging.set(session, (this.#judging.get(session) ?? 0) + 1);
    try {
      return await judge();
    } finally {
      const left = (this.#judging.get(session) ?? 1) - 1;
      if (left === 0) this.#judging.delete(session);
      else this.#judging.set(session, left);
    }
  }

  /** Whether a request of the session is being judged now. */
  isJudging(session: string): boolean {
    return this.#judging.has(session);
  }

  /** The session's live flows. */
  of(session: string): Flow[] {
    return [...(this.#bySession.get(session) ?? [])];
  }

  paused(session: string): void {
    for (const flow of this.of(session)) this.#freeze(flow);
  }

  resumed(session: string): void {
    for (const flow of this.of(session)) {
      if (!flow.frozen) continue;
      if (!this.record(flow.basis, 'thawed', 'session resumed by an operator')) {
        this.#close(flow, 'the journal cannot be written, so the flow is not resumed');
        continue;
      }
      if (flow.holdTimer !== null) clearTimeout(flow.holdTimer);
      flow.holdTimer = null;
      flow.thaw();
    }
  }

  denied(session: string): void {
    for (const flow of this.of(session)) this.#close(flow, 'denied by an operator');
  }

  /**
   * Closes the flows (of `session`, or all) that `why` gives a reason for: an approval revoked,
   * a deny added, a reload that no longer allows them. Returns how many.
   */
  closeWhere(why: (basis: Basis) => string | null, session?: string): number {
    this.#generation++;
    let closed = 0;
    const sessions = session === undefined ? [...this.#bySession.keys()] : [session];
    for (const s of sessions) {
      for (const flow of this.of(s)) {
        const reason = why(flow.basis);
        if (reason === null) continue;
        if (this.#close(flow, reason)) closed++;
      }
    }
    return closed;
  }

  /**
   * Closes every tunnel, each journaled with `reason` (a stop's drain deadline; requests still
   * running are cut with their connections, as the drain counts them).
   */
  closeAll(reason: string): void {
    this.closeWhere((b) => (b.kind === 'request' || b.kind === 'tool' ? null : reason));
  }

  /** Closes one flow for `reason` (a trajectory rule refused it); journaled. */
  close(flow: Flow, reason: string): boolean {
    return this.#close(flow, reason);
  }

  #freeze(flow: Flow): void {
    // Frozen first: stopping a flow needs no permission, only a record.
    if (!flow.freeze()) return;
    this.record(flow.basis, 'frozen', 'session paused');
    flow.holdTimer = setTimeout(
      () =>
        this.#close(flow, `no operator decided within the hold time (${this.holdTimeoutMs} ms)`),
      this.holdTimeoutMs,
    );
  }

  #close(flow: Flow, reason: string): boolean {
    if (flow.closed !== null) return false;
    this.record(flow.basis, 'closed', reason);
    flow.close(reason);
    flow.end();
    return true;
  }

  #armExpiry(flow: Flow, expiresAt: number): void {
    const delay = expiresAt - Date.now();
    if (delay <= 0) {
      this.#close(flow, 'the approval that admitted it expired');
      return;
    }
    flow.expiryTimer = setTimeout(
      () => this.#armExpiry(flow, expiresAt),
      Math.min(delay, MAX_DELAY),
    );
  }
}

/**
 * A session's live flows, linked through the flows themselves: registering one per request
 * allocates nothing and churns no hash table (a Set's did, and showed in the proxy's GC time).
 */
class SessionFlows {
  #head: Flow | null = null;
  size = 0;

  add(flow: Flow): void {
    flow.list = this;
    flow.prev = null;
    flow.next = this.#head;
    if (this.#head !== null) this.#head.prev = flow;
    this.#head = flow;
    this.size++;
  }

  /** False when the flow is not in this list (ended before). */
  remove(flow: Flow): boolean {
    if (flow.list !== this) return false;
    if (flow.prev === null) this.#head = flow.next;
    else flow.prev.next = flow.next;
    if (flow.next !== null) flow.next.prev = flow.prev;
    flow.list = flow.prev = flow.next = null;
    this.size--;
    return true;
  }

  *[Symbol.iterator](): IterableIterator<Flow> {
    for (let f = this.#head; f !== null; f = f.next) yield f;
  }
}

/**
 * Control of a connection whose HTTP trajgate reads itself (intercepted TLS, read plain HTTP;
 * HTTP/2 through ingress/h2-wire, as nghttp2 would read the socket natively, unpaused). Node's HTTP server pauses and resumes its sockets for its own flow control, so while
 * frozen a resume from it is ignored; corked, responses in flight stop reaching the agent.
 */
export function socketControl(socket: Socket): FlowControl {
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
