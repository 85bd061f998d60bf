import type { Event } from '../event/event.js';

/**
 * The channels a decision can let through: one request (its body up and its answer down), a
 * blind CONNECT, an upgrade, tunnels whose requests trajgate reads itself (each of those
 * requests is a `request` flow of its own), and a tool call on the bridge (its answer down).
 */
export type FlowKind = 'request' | 'connect' | 'upgrade' | 'read' | 'intercepted' | 'tool';

/** What admitted a flow, and so what must still hold for it to go on (pipeline/flow-basis). */
export interface Basis {
  readonly session: string;
  readonly kind: FlowKind;
  /** The URL, or `host:port` as the CONNECT named it. */
  readonly target: string;
  /** The request id of its event; null for a tunnel judged request by request inside. */
  readonly rid: number | null;
  /** The event judged; null for a tunnel judged request by request inside. */
  readonly event: Event | null;
  /** Whether an approval (an allowlist entry or an operator's) admitted it. */
  readonly approved: boolean;
  /** When that approval expires (ms since the epoch), or null. */
  readonly expiresAt: number | null;
  /** The address the egress check allowed, and its port; null when trajgate dials nothing. */
  readonly dial: { readonly address: string; readonly port: number } | null;
}

/** What the owner of a flow does when its session's state moves. */
export interface FlowControl {
  /** Nothing more is relayed either way; what was read stays with trajgate. */
  freeze(): void;
  thaw(): void;
  close(reason: string): void;
}

export type FlowChange = 'frozen' | 'thawed' | 'closed';

/** Journals a change before it takes effect; false when the journal failed. */
export type FlowRecorder = (basis: Basis, change: FlowChange, reason: string) => boolean;

/** Bytes sent up between two reports to the guard: a volume rule fires within this of its limit. */
const REPORT_STEP = 16 * 1024;

const IDLE: FlowControl = {
  freeze: () => undefined,
  thaw: () => undefined,
  close: () => undefined,
};

/**
 * One channel from the moment it is judged until its last byte. Until its owner hands over a
 * control (the relay has begun) it is opening: a freeze or close then reaches it at `gate()`,
 * asked at the moment it would start relaying (after connect, after a `101`, after the first
 * byte), and through the control of the wait under way (a connect, an upgrade's `101`).
 */
export class Flow {
  #state: 'live' | 'frozen' | 'closed' = 'live';
  #reason: string | null = null;
  #control: FlowControl = IDLE;
  /** Who waits at `gate()`; none until someone does (most flows never wait). */
  #waiters: ((go: boolean) => void)[] | null = null;
  holdTimer: NodeJS.Timeout | null = null;
  expiryTimer: NodeJS.Timeout | null = null;
  /** The list of its session's live flows it is in (action/flow-registry), and its neighbours. */
  list: object | null = null;
  prev: Flow | null = null;
  next: Flow | null = null;
  /** Bytes sent upstream so far: request line, headers and body, or a tunnel's as they flow. */
  bytesUp = 0;
  /** Of those, the bytes the guard has been told of (volume rules). */
  reportedUp = 0;

  constructor(
    readonly basis: Basis,
    private readonly report: ((flow: Flow) => void) | null,
    private readonly ended: (flow: Flow) => void,
  ) {}

  /** Its last byte went: it follows its session no more. */
  end(): void {
    this.ended(this);
  }

  /** Counts bytes sent upstream; every REPORT_STEP of them reach the guard while it runs. */
  up(bytes: number): void {
    this.bytesUp += bytes;
    if (this.report !== null && this.bytesUp - this.reportedUp >= REPORT_STEP) this.report(this);
  }

  get frozen(): boolean {
    return this.#state === 'frozen';
  }

  /** Why it was closed, or null while it may go on. */
  get closed(): string | null {
    return this.#reason;
  }

  /** Whether it may relay at this moment: its session runs and nothing closed it. */
  get live(): boolean {
    return this.#state === 'live';
  }

  /**
   * Waits until it may relay (`live`): true, or false once closed (denied, revoked, lapsed, the
   * hold timed out). Asked at the moment a flow would start relaying, after every wait.
   */
  async gate(): Promise<boolean> {
    while (this.#state !== 'live') {
      if (this.#state === 'closed') return false;
      await new Promise<boolean>((resolve) => (this.#waiters ??= []).push(resolve));
    }
    return true;
  }

  /** The relay has begun (or a connect is under way): later changes reach it at once. */
  attach(control: FlowControl): void {
    this.#control = control;
    if (this.#state === 'frozen') control.freeze();
    else if (this.#state === 'closed') control.close(this.#reason as string);
  }

  freeze(): boolean {
    if (this.#state !== 'live') return false;
    this.#state = 'frozen';
    this.#control.freeze();
    return true;
  }

  thaw(): boolean {
    if (this.#state !== 'frozen') return false;
    this.#state = 'live';
    this.#control.thaw();
    this.#wake(true);
    return true;
  }

  close(reason: string): boolean {
    if (this.#state === 'closed') return false;
    this.#state = 'closed';
    this.#reason = reason;
    this.#control.close(reason);
    this.#wake(false);
    return true;
  }

  #wake(go: boolean): void {
    const waiters = this.#waiters ?? [];
    this.#waiters = null;
    for (const w of waiters) w(go);
  }
}
