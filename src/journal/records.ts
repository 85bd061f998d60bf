import type { Event } from '../event/event.js';
import type { Decision } from '../guard/guard.js';
import type {
  CredentialUseView,
  EventRecord,
  PauseRecord,
  RecordBase,
  ToolDefinitionView,
  ToolDiffView,
} from '../wire.js';
import type { JournaledCommand, JournaledTarget } from './long-target.js';
import { withJournaledTarget } from './long-target.js';

/**
 * Journal records, one JSON object per line. `seq` and `ts` (ISO 8601) lead every record;
 * field names are the contract (docs/journal.md). The event and pause records are in
 * ../wire.d.ts: the review page reads them too.
 */
export type { CredentialUseView, EventRecord, PauseRecord, RecordBase };

/**
 * How a request or tunnel ended; `rid` is its request id: the seq of its first event record
 * (older journals: `ref`, see old-names.ts).
 */
export interface OutcomeRecord extends RecordBase {
  readonly type: 'outcome';
  readonly rid: number;
  readonly session: string;
  readonly status: number | null;
  readonly bytesUp: number;
  readonly bytesDown: number;
  readonly durationMs: number;
  readonly error?: string;
  /** The upstream failed (status ≥ 400, no answer, a tool's error): trajectory rules see it. */
  readonly failed?: true;
  /** A blind tunnel's TLS server name (SNI); null when its ClientHello named none, or no TLS. */
  readonly sni?: string | null;
  /** What a blind tunnel's first client bytes were (ssh, postgres, tls or unknown). */
  readonly protocol?: string;
  /** The tunnel came by the SOCKS5 listener (`listen.socks`); absent for CONNECT. */
  readonly via?: 'socks';
  /** A gRPC call's status (`grpc-status`); any but 0 makes it `failed`. */
  readonly grpcStatus?: number;
}

/**
 * How a call ended, as the runner that asked about it reports (`POST /events/result`, a Claude
 * Code PostToolUse hook). It decides nothing. `rid` is the request id of the event asked with
 * the same `call` id, else null with `unlinked` saying why: such a result counts as a failure
 * of the session (every rule waiting for a failure is marked).
 */
export interface ResultRecord extends RecordBase, JournaledTarget, Partial<JournaledCommand> {
  readonly type: 'result';
  readonly session: string;
  readonly rid: number | null;
  readonly kind: string;
  readonly ok: boolean;
  readonly error?: string;
  readonly tool?: string;
  /** The runner's id of the call (Claude Code's `tool_use_id`). */
  readonly call?: string;
  /** Why no call is known for it; it then counts as a failure of the session. */
  readonly unlinked?: string;
}

/**
 * Roots a client listed (its `roots/list` answer through the bridge) that were outside the
 * session's workspace, removed before the tool server saw them; `kept` are what it received.
 */
export interface RootsRecord extends RecordBase {
  readonly type: 'roots';
  readonly session: string;
  readonly client: string;
  readonly removed: readonly string[];
  readonly kept: readonly string[];
}

/**
 * A request refused before it became an event: malformed, or no valid credentials. Bounded
 * (see journal/refusal-limits.ts): summaries with `suppressed`.
 */
export interface RefusalRecord extends RecordBase, Partial<JournaledTarget> {
  readonly type: 'refusal';
  readonly source: Event['source'];
  readonly client: string;
  readonly status: number;
  readonly reason: string;
  readonly session?: string;
  readonly method?: string;
  /** A summary standing for this many refusals from `client` left out in one second. */
  readonly suppressed?: number;
  /**
   * The agent refused trajgate's certificate in an intercepted TLS handshake: the alert it
   * sent (`unknown_ca`, `bad_certificate`, `certificate_unknown`), or `closed` when it hung
   * up. Shown by `trajgate events`, the review page and the log (review/handshakes.ts).
   */
  readonly handshake?: string;
  /** Refused on the SOCKS5 listener (`listen.socks`). */
  readonly via?: 'socks';
}

/**
 * A live flow followed its session: frozen by a pause, thawed by a resume, closed by a deny,
 * the hold timeout, its approval's expiry or a change that took its basis away (revoke, deny
 * pattern, reload). `tunnel` for a CONNECT, an upgrade or a tunnel read inside, `flow` for one
 * request (its body and answer) or tool call; `flow` names which kind (`read`: a CONNECT whose
 * requests trajgate reads, `inspected` in older journals). `rid` is its request id, absent for
 * tunnels judged request by request inside (intercepted or read).
 */
export interface TunnelRecord extends RecordBase, JournaledTarget {
  readonly type: 'tunnel' | 'flow';
  readonly flow?: 'request' | 'connect' | 'upgrade' | 'read' | 'intercepted' | 'tool';
  readonly session: string;
  readonly rid?: number;
  readonly change: 'frozen' | 'thawed' | 'closed';
  readonly reason: string;
}

export interface PauseJournalRecord extends RecordBase, PauseRecord {
  readonly type: 'pause';
}

export interface DenyRecord extends RecordBase {
  readonly type: 'deny';
  readonly session: string;
  readonly by: string;
  /** Held requests answered 403 by this denial. */
  readonly released: number;
}

export interface ApproveRecord extends RecordBase {
  readonly type: 'approve';
  /** Its id when several gateways share the state (else `a` + seq). */
  readonly id?: string;
  readonly session: string | null;
  readonly pattern: string;
  readonly kind: string;
  readonly expiresAt: string | null;
  readonly by: string;
}

export interface ResumeRecord extends RecordBase {
  readonly type: 'resume';
  readonly session: string;
  readonly reset: boolean;
  /**
   * "Approve once": the held requests with these rids were forwarded as approved (their events
   * say so); the others stayed held and the session paused, so this record does not unpause.
   * `true` (older journals): a resume that forwarded every held request approved.
   */
  readonly once?: true | readonly number[];
  /** The gateway whose rids `once` names, when several share the state. */
  readonly onceAt?: string;
  /** The session's trajectory marks were kept (`resume --keep-marks`). */
  readonly keepMarks?: true;
  readonly by: string;
}

/**
 * An operator raised a session's budget by `amount` in its current window (`POST
 * /api/sessions/:id/topup`, `trajgate topup`, a decision link); written before it takes effect,
 * replayed at restart. A session paused by a budget is then resumed (its own resume record).
 */
export interface TopUpRecord extends RecordBase {
  readonly type: 'topup';
  readonly session: string;
  readonly budget: string;
  readonly amount: number;
  readonly by: string;
}

/** A config reload: the file read again and applied (see Reloader). */
export interface ConfigRecord extends RecordBase {
  readonly type: 'config';
  readonly file: string;
  /** SHA-256 of the file's bytes as applied. */
  readonly sha256: string;
  readonly by: string;
  /** Changed keys that take effect only after a restart. */
  readonly restartNeeded: readonly string[];
}

/**
 * An operator removed an approval (`a<seq>`) or a deny pattern (`d<seq>`) by its id; replayed
 * at restart. `kind` is the approval's event kind (`network` for a deny pattern).
 */
export interface RevokeRecord extends RecordBase {
  readonly type: 'revoke';
  readonly id: string;
  readonly pattern: string;
  readonly kind: string;
  readonly session: string | null;
  readonly by: string;
}

/**
 * An operator's deny pattern (id `d<seq>`): refused whatever allows or approves it. Older
 * journals call it `block` (old-names.ts).
 */
export interface DenyPatternRecord extends RecordBase {
  readonly type: 'deny-pattern';
  /** Its id when several gateways share the state (else `d` + seq). */
  readonly id?: string;
  readonly session: string | null;
  readonly pattern: string;
  readonly by: string;
}

/**
 * An operator revoked a credential (requests carrying its sentinel are refused, flows carrying
 * it closed) or restored it; replayed at restart. Written before it takes effect.
 */
export interface CredentialRecord extends RecordBase {
  readonly type: 'credential';
  readonly name: string;
  readonly action: 'revoke' | 'restore';
  readonly by: string;
}

/**
 * A server's tool list pinned (`by`: `first-use` for the first list seen, else the operator who
 * pinned it after review; `tools`: the whole list pinned now), or a list a session was shown
 * that differs from the pinned one (`tools`: the whole list as seen; `complete: false` when it
 * was a page, which removes nothing). Written by gateway/tool-pins.ts before it takes effect.
 */
export interface ToolsPinnedRecord extends RecordBase {
  readonly type: 'tools';
  readonly change: 'pinned';
  readonly server: string;
  readonly digest: string;
  readonly by: string;
  readonly tools: readonly ToolDefinitionView[];
}

export interface ToolsChangedRecord extends RecordBase {
  readonly type: 'tools';
  readonly change: 'changed';
  readonly server: string;
  readonly session: string;
  readonly digest: string;
  readonly pinned: string;
  readonly diff: readonly ToolDiffView[];
  readonly tools: readonly ToolDefinitionView[];
  readonly complete?: false;
}

export type ToolsRecord = ToolsPinnedRecord | ToolsChangedRecord;

/**
 * A session forgotten: nothing it did could raise a verdict any more (no pause, flag, marks in
 * force, approvals, counts, held requests or open flows) and it was idle since `idleSince`
 * for longer than `policy.sessionIdle`. Replayed at restart; if it comes back it starts at zero.
 */
export interface EvictRecord extends RecordBase {
  readonly type: 'evict';
  readonly session: string;
  /** Its last activity (ISO 8601). */
  readonly idleSince: string;
  readonly reason: string;
}

/**
 * The start of a rotated-to file: the whole state a restart rebuilds, as of record `seq` (the
 * previous file's last; a snapshot takes no seq of its own). Version 1 is one line; version 2
 * is this head after `parts` part lines sealed by `digest` (snapshot-read.ts), read back as
 * one record whose state holds them. See review/snapshot.ts.
 */
export interface SnapshotRecord extends RecordBase {
  readonly type: 'snapshot';
  readonly version: number;
  readonly parts?: number;
  readonly digest?: string;
  readonly state: unknown;
}

export type JournalRecord =
  | SnapshotRecord
  | ToolsRecord
  | EvictRecord
  | CredentialRecord
  | RevokeRecord
  | DenyPatternRecord
  | ConfigRecord
  | EventRecord
  | OutcomeRecord
  | ResultRecord
  | RefusalRecord
  | RootsRecord
  | TunnelRecord
  | ApproveRecord
  | ResumeRecord
  | TopUpRecord
  | DenyRecord
  | PauseJournalRecord;

/** A record before the journal stamps it with `seq`, `ts` and `prev`. */
export type Unstamped<R extends RecordBase> = R extends RecordBase
  ? Omit<R, 'seq' | 'ts' | 'prev'>
  : never;

/**
 * The event record of a decision; absent fields are left undefined, which JSON omits. A long
 * target (and text) is bounded here, not only by the writer: what the gateway keeps of the
 * event (recent events, a pause record, event pages) is what the file holds.
 */
export function eventRecord(
  event: Event,
  decision: Decision,
  request: { rid?: number | undefined; held?: true | undefined; sentUp?: number | undefined } = {},
): Unstamped<EventRecord> {
  return withJournaledTarget({
    type: 'event',
    session: event.session,
    source: event.source,
    kind: event.kind,
    target: event.target,
    // Declared here so that a long target's fields come in this order (json.ts writes it so).
    targetBytes: undefined,
    targetSha256: undefined,
    command: event.command,
    commandBytes: undefined,
    commandSha256: undefined,
    method: event.method,
    resolved: event.subject.type === 'path' ? event.subject.path : undefined,
    alias: event.subject.type === 'path' ? (event.subject.alias ?? undefined) : undefined,
    tree: event.subject.type === 'path' ? event.subject.tree : undefined,
    call: event.call,
    approved: decision.approved,
    verdict: decision.verdict,
    boundary: decision.boundary,
    count: decision.count,
    reason: decision.reason,
    approvedBy: decision.approvedBy ?? undefined,
    counted: decision.counted ?? undefined,
    rule: decision.rule,
    denied: event.denied ?? decision.deniedBy,
    rid: request.rid,
    held: request.held,
    failed: event.failed,
    marks: decision.marks,
    onFailure: decision.onFailure,
    eventNo: decision.eventNo,
    budgeted: decision.budgeted,
    sentUp: request.sentUp,
    credentials: event.credentials,
    exfiltration: event.exfiltration,
    // The mark's summary is in `reason`; the record names the list.
    toolChange:
      event.toolChange === undefined
        ? undefined
        : { server: event.toolChange.server, digest: event.toolChange.digest },
  });
}
