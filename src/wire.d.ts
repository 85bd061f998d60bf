/**
 * The JSON the admin API sends, the journal records it passes on included: one source for the
 * server that builds it and the review page (src/review/page/, a separate browser build) that
 * reads it. A declaration file that imports nothing: the page's build takes it without
 * compiling server code, and nothing is emitted for it. The server's build skips checking
 * declaration files (skipLibCheck); the page's build checks this one.
 */

export type Source = 'proxy' | 'bridge' | 'ingest' | 'replay';

/** The guard's answers (guard/guard.ts). */
export type Verdict = 'ALLOW' | 'REVIEW' | 'PAUSE';

/**
 * Journal records, one JSON object per line (journal/records.ts). `seq` and `ts` (ISO 8601)
 * lead every record; field names are the contract (docs/journal.md).
 */
export interface RecordBase {
  readonly seq: number;
  readonly ts: string;
  /** SHA-256 (hex) of the journal line before this one (src/journal/chain.ts). */
  readonly prev?: string;
}

export interface EventRecord extends RecordBase {
  readonly type: 'event';
  readonly session: string;
  readonly source: Source;
  readonly kind: string;
  /** The whole target, or past 512 bytes of UTF-8 its first 512 (journal/long-target.ts). */
  readonly target: string;
  /** UTF-8 bytes of the whole target, when `target` is only its prefix. */
  readonly targetBytes?: number;
  /** SHA-256 (hex) of the whole target, when `target` is only its prefix. */
  readonly targetSha256?: string;
  /**
   * A `command` event's command line, secrets redacted; past 2,048 bytes (as JSON writes it)
   * its prefix (journal/long-target.ts).
   */
  readonly command?: string;
  /** UTF-8 bytes of the whole (redacted) command line, when `command` is only its prefix. */
  readonly commandBytes?: number;
  /** SHA-256 (hex) of the whole (redacted) command line, when `command` is only its prefix. */
  readonly commandSha256?: string;
  readonly method?: string;
  /**
   * A read/write/command target as resolved when it was judged: its real path, or null when it
   * could not be resolved (judged as outside). `replay` judges this, so a link changed since
   * cannot change the verdict. Absent in journals older than it (replay resolves again).
   */
  readonly resolved?: string | null;
  /** The lexical-`..` reading of the target, when it differs from `resolved`. */
  readonly alias?: string;
  /** A read of everything under `target` (a search, a directory tree): read rules judge it so. */
  readonly tree?: true;
  /** The runner's id of the call (Claude Code's `tool_use_id`), which its result names. */
  readonly call?: string;
  readonly approved: boolean;
  readonly verdict: Verdict;
  readonly boundary: string | null;
  readonly count: number;
  readonly reason: string;
  readonly approvedBy?: string;
  readonly counted?: Readonly<Record<string, number>>;
  /** The sequence rule that named this decision; `after`: the seq that set its mark (not for volume). */
  readonly rule?: { readonly name: string; readonly after?: number };
  /**
   * Why the gateway refused it on its own (private address, port not allowed), or the deny
   * pattern that refused it (`network.deny: …`, `blocked by an operator (d7): …`).
   */
  readonly denied?: string;
  /** The request's id when this is not its first event record (judged again after resume). */
  readonly rid?: number;
  /** Arrived while the session was paused: held unjudged, judged again on resume. */
  readonly held?: true;
  /** The event reported itself a failure (`"failed": true` from a runner or a recorded line). */
  readonly failed?: true;
  /** Trajectory rules whose mark this event set (it matched their `after`). */
  readonly marks?: readonly string[];
  /** Rules it marks if its outcome is a failure (their `after` asks `failed: true`). */
  readonly onFailure?: readonly string[];
  /** The session's count of judged events, this one included (with `policy.sequences` only). */
  readonly eventNo?: number;
  /**
   * A live flow judged again mid-flow (a trajectory rule reached it): the bytes its request had
   * sent up by then, as the guard counted them (replay and restart count them before judging).
   */
  readonly sentUp?: number;
  /**
   * What it counted toward each budget (`policy.budgets`): the window's start (ms), what it
   * used after this event, a host it added.
   */
  readonly budgeted?: Readonly<
    Record<string, { readonly start: number; readonly used: number; readonly host?: string }>
  >;
  /** Credentials this request carried to their own hosts: their sentinels swapped for values. */
  readonly credentials?: readonly string[];
  /** A credential's sentinel found where it does not belong (boundary `credential-exfiltration`). */
  readonly exfiltration?: { readonly credential: string; readonly where: string };
  /**
   * The session was shown a tool list that differs from the pinned one (boundary
   * `tool-changed`): the server and the digest of the list it was shown.
   */
  readonly toolChange?: { readonly server: string; readonly digest: string };
}

/**
 * One tool as a server's `tools/list` answer defines it (MCP 2025-11-25, Tools): what is
 * pinned, compared and shown. Fields the server left out are absent.
 */
export interface ToolDefinitionView {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema?: unknown;
  readonly outputSchema?: unknown;
  readonly annotations?: unknown;
  /** SHA-256 (hex) of its canonical JSON: the fields above, keys sorted at every depth. */
  readonly digest: string;
}

/** How one tool differs from its pinned definition. */
export interface ToolDiffView {
  readonly tool: string;
  readonly change: 'added' | 'removed' | 'changed';
  /** For `changed`: which fields differ (`description`, `inputSchema`, …). */
  readonly fields: readonly string[];
  readonly old?: ToolDefinitionView;
  readonly new?: ToolDefinitionView;
}

/** A tool list a server sent that differs from what is pinned for it. */
export interface ToolChangeView {
  readonly server: string;
  /** The digest of the list as sent now (what pinning it would pin). */
  readonly digest: string;
  /** The digest of the pinned list. */
  readonly pinned: string;
  readonly diff: readonly ToolDiffView[];
}

/** A server's pinned tool definitions (`GET /api/tools`, `trajgate tools`). */
export interface ToolPinsView {
  readonly server: string;
  readonly digest: string;
  readonly pinnedAt: string;
  /** `first-use` when pinned from the first list seen; else the operator who pinned it. */
  readonly by: string;
  readonly tools: readonly ToolDefinitionView[];
  /** Lists seen since that differ, not yet pinned. */
  readonly pending: readonly ToolChangeView[];
}

/** A credential a session's traffic carried (`GET /api/sessions/:id`, `trajgate sessions`). */
export interface CredentialUseView {
  readonly name: string;
  /** Requests that carried it to its own hosts. */
  readonly uses: number;
  /** Events that carried its sentinel where it does not belong. */
  readonly exfiltrations: number;
  /** Its own hosts it went to (`host:port`), the first few. */
  readonly hosts: readonly string[];
  /** The session's first event that carried it. */
  readonly first: Pick<EventRecord, 'seq' | 'ts' | 'kind' | 'method' | 'target'>;
  readonly last: string;
}

/** An event as the events route pages it: with the status its request ended, when journaled. */
export interface EventView extends EventRecord {
  readonly status?: number | null;
}

/**
 * A TLS handshake the agent refused in interception (its client does not trust trajgate's CA):
 * its `refusal` record, listed with the session's events.
 */
export interface RefusedHandshakeRecord extends RecordBase {
  readonly type: 'refusal';
  readonly session: string;
  readonly source: Source;
  readonly client: string;
  readonly status: number;
  /** The CONNECT authority, `host:port`. */
  readonly target: string;
  readonly reason: string;
  /** The TLS alert the agent sent (`unknown_ca`, `bad_certificate`, `certificate_unknown`), or `closed`. */
  readonly handshake: string;
}

/** A refused handshake as the session detail shows it, with what to do about it. */
export interface HandshakeView {
  readonly seq: number;
  readonly ts: string;
  readonly target: string;
  readonly handshake: string;
  readonly reason: string;
  readonly hint: string;
}

/**
 * `GET /api/sessions/:id/events`: newest first, with the TLS handshakes the agent refused among
 * them; `next` is the `before` of the next page.
 */
export interface EventsPage {
  readonly events: readonly (EventView | RefusedHandshakeRecord)[];
  readonly next: number | null;
}

/**
 * `POST /api/sessions/:id/resume` (plain): how many held requests were judged again, and the
 * new pause when one of them paused the session again at once.
 */
export interface ResumeAnswer {
  readonly resumed: true;
  readonly released: number;
  readonly pausedAgain: PausedAgain | null;
}

export interface PausedAgain {
  readonly reason: string;
  readonly boundary: string | null;
  readonly count: number;
  readonly trigger: Pick<EventRecord, 'seq' | 'kind' | 'method' | 'target'>;
}

/** A request a pause record holds. `rid` and `bytes` are absent in older journals. */
export interface PauseHeld {
  /** The request's id: the seq of its first event record. */
  readonly rid?: number;
  readonly what: string;
  /** The request body's size (its Content-Length), null when not known. */
  readonly bytes?: number | null;
  readonly since: number;
  readonly deadline: number;
}

/** What an operator is handed when a session pauses (docs/notifications.md). */
export interface PauseRecord {
  readonly session: string;
  readonly pausedAt: string;
  readonly boundary: string | null;
  readonly count: number;
  readonly reason: string;
  readonly trigger: EventRecord;
  /** The session's last `policy.recentEvents` events, oldest first, the trigger last. */
  readonly recent: readonly EventRecord[];
  /** Requests held when it paused (ms timestamps); an approve-once link names their rids. */
  readonly held: readonly PauseHeld[];
  /** Read back after a restart: the held connections were lost with the old process. */
  readonly restored: boolean;
  /**
   * The earlier event of the sequence rule that paused it (`trigger.rule.after`), when the
   * gateway still had it: the person deciding sees both events of the pair.
   */
  readonly after?: EventRecord;
  /**
   * A pause on a sentinel out of place: the session's first event that carried that credential
   * (how the agent came to hold it), when the gateway still had it.
   */
  readonly firstSeen?: EventRecord;
  /** A pause on a changed tool list (`tool-changed`): the difference, old and new text. */
  readonly toolChange?: ToolChangeView;
}

/** `GET /api/health`: whether the journal can be written, so whether requests are served. */
export interface HealthView {
  readonly status: 'ok' | 'degraded';
  readonly journal: {
    readonly path: string;
    readonly writable: boolean;
    /** When the failing writes began (null while writable). */
    readonly failingSince: string | null;
    /** Failed writes since the gateway started. */
    readonly failures: number;
    readonly lastFailure: { readonly at: string; readonly error: string } | null;
  };
  readonly store: StoreView;
}

/** Where the trajectory is kept (`state.store`) and whether it answers. */
export interface StoreView {
  readonly kind: 'memory' | 'redis';
  readonly up: boolean;
  /** Why it does not answer (null while up). */
  readonly error: string | null;
}

/** What one exchange's capture file holds (`<rid>.json`), read back by the admin API and HAR. */
export interface CapturedExchange {
  readonly rid: number;
  readonly session: string;
  /** False when the request was refused (or held, then refused): its body never left. */
  readonly forwarded: boolean;
  readonly request: CapturedPart & { readonly method: string; readonly url: string };
  /** The upstream's response, or the refusal trajgate answered; null when there was none. */
  readonly response: (CapturedPart & { readonly status: number }) | null;
}

export interface CapturedPart {
  readonly headers: readonly [string, string][];
  /** The kept body: text, or base64 (`encoding`). */
  readonly body: string;
  readonly encoding: 'text' | 'base64';
  /** The content codings undone for `body` (Content-Encoding, in the order applied). */
  readonly decoded?: readonly string[];
  /** The body's size on the wire, kept or not. */
  readonly size: number;
  /** Not all of it is in `body` (cut at `capture.maxBytes`, sent or decoded, or never sent whole). */
  readonly truncated: boolean;
}

/** The approval that fits an event without widening it (guard/suggest.ts). */
export interface Suggestion {
  readonly pattern: string;
  readonly kind: string;
}

/** `GET /api/events/:seq`: the event and the approval that would fit it. */
export interface EventAnswer {
  readonly event: EventRecord;
  readonly suggestion: Suggestion;
}

/** An approval as the API, CLI and page show it. */
export interface ApprovalView {
  /** `a<seq>` (an operator's: revocable), `c<n>` (a config entry: edit the config). */
  readonly id: string;
  readonly pattern: string;
  readonly kind: string;
  readonly session: string | null;
  readonly expiresAt: string | null;
  readonly origin: 'config' | 'operator';
  /** `network.allow`, `agents.<id>.allow`, `roles.<name>.allow` or `operator`. */
  readonly source: string;
  /** The admin token's name that approved it; null for config entries. */
  readonly by: string | null;
}

/** A deny pattern as the API, CLI and page show it (guard/denies.ts adds how it matches). */
export interface DenyView {
  /** `d<seq>` of its deny-pattern record (an operator's), `cd<n>` for a `network.deny` entry. */
  readonly id: string;
  readonly pattern: string;
  /** One session, or null for every session. */
  readonly session: string | null;
  readonly origin: 'config' | 'operator';
  /** `network.deny` or `operator`. */
  readonly source: string;
  readonly by: string | null;
}

/** `flagged`: a REVIEW since the last operator action on the session (and not paused). */
export type SessionState = 'active' | 'flagged' | 'paused';

export interface SessionView {
  readonly id: string;
  readonly state: SessionState;
  /** REVIEWs since the last operator action on the session. */
  readonly flagged: number;
  /** Crossings per boundary (summed over destinations under `countBy: target`). */
  readonly counts: Record<string, number>;
  readonly pausedAt: string | null;
  readonly pausedBy: string | null;
  /** The sequence rule that paused it (its trigger's `rule`), or null. */
  readonly pausedRule: { readonly name: string; readonly after?: number } | null;
  readonly held: number;
  readonly lastActivity: string | null;
  readonly events: number;
  /** Names of the credentials its traffic carried (to their hosts or out of place). */
  readonly credentialNames: readonly string[];
}

/** `GET /api/sessions`: a page of the list, `next` the cursor of the next page (null: the last). */
export interface SessionsAnswer {
  readonly sessions: readonly SessionView[];
  readonly next: string | null;
  /** Sessions the filter (`state`, `agent`) matches; null with `q`: a search counts nothing. */
  readonly total: number | null;
  /** Sessions per state, whatever the filter. */
  readonly counts: Readonly<Record<SessionState, number>>;
}

export interface HeldView {
  readonly id: number;
  /** The request's id (the seq of its first event record): what an approve-once names. */
  readonly rid: number;
  readonly what: string;
  /** The request body's size (its Content-Length), null when not known. */
  readonly bytes: number | null;
  readonly since: string;
  readonly deadline: string;
  readonly waitedMs: number;
  readonly timeoutInMs: number;
}

export interface SessionDetail extends SessionView {
  readonly pause: PauseRecord | null;
  readonly heldRequests: readonly HeldView[];
  readonly recent: readonly EventRecord[];
  readonly approvals: readonly ApprovalView[];
  /** The REVIEW events behind `flagged`, oldest first (the newest 20). */
  readonly reviews: readonly EventRecord[];
  readonly denies: readonly DenyView[];
  /** The effective config allowlist: network.allow, the agent's and its roles' allow. */
  readonly allowlist: readonly string[];
  /** Whether requests are captured (`capture.bodies`): the page asks for captures only then. */
  readonly captures: boolean;
  /** TLS handshakes the agent refused: how many, and the newest 20, oldest first. */
  readonly handshakes: { readonly refused: number; readonly recent: readonly HandshakeView[] };
  /** The credentials its traffic carried: uses, hosts, exfiltrations, the first event. */
  readonly credentials: readonly CredentialUseView[];
  /** Each configured budget (`policy.budgets`) as the session uses it now. */
  readonly budgets: readonly BudgetView[];
}

/** A budget of a session: its window now, what it used of its limit (topped up included). */
export interface BudgetView {
  readonly name: string;
  readonly measure: 'requests' | 'bytesUp' | 'toolCalls' | 'hosts';
  /** The budget's own limit plus the session's top-ups in this window. */
  readonly limit: number;
  readonly toppedUp: number;
  readonly used: number;
  readonly within: string;
  readonly verdict: Verdict;
  /** When the window opened and ends; null when none is open (the next use opens one). */
  readonly windowStart: string | null;
  readonly windowEnds: string | null;
}

/** `POST /api/sessions/:id/topup`: the budget now, and the resume it made (if it paused). */
export interface TopUpAnswer {
  readonly budget: BudgetView | null;
  readonly amount: number;
  /** A budget had paused the session: it was resumed, its held requests judged again. */
  readonly resumed: boolean;
  readonly released: number;
  readonly pausedAgain: PausedAgain | null;
}

/**
 * A configured credential as `GET /api/credentials` lists it: never its value. `agents` and
 * `roles` null: given to every agent.
 */
export interface CredentialView {
  readonly name: string;
  readonly hosts: readonly string[];
  /** The variable `trajgate env` exports its sentinel in. */
  readonly env: string;
  readonly sentinel: string;
  /** Where the value goes: `header Authorization (Bearer)`, `query access_token`. */
  readonly place: string;
  readonly agents: readonly string[] | null;
  readonly roles: readonly string[] | null;
  readonly revoked: boolean;
}

/** `POST /api/credentials/:name/revoke|restore`: the credential now, and what it closed. */
export interface CredentialAnswer {
  readonly credential: CredentialView;
  /** False when it already was so: nothing journaled. */
  readonly changed: boolean;
  /** Live flows carrying it that the revoke closed. */
  readonly closed: number;
}
