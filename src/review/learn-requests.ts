import type { NetworkSubject } from '../event/event.js';
import type { NetworkPattern } from '../event/network-pattern.js';
import { matchesNetwork, parseNetworkPattern } from '../event/network-pattern.js';
import { parseNetworkTarget } from '../event/network-target.js';
import type { JournalRecord } from '../journal/records.js';

/** One network request (or tunnel) of a journal, and whether it went through. */
export interface LearnedRequest {
  readonly session: string;
  /** Its first event record's `seq`, and the journal's place among those read. */
  readonly seq: number;
  readonly journal: number;
  readonly ts: string;
  readonly target: string;
  /** As the guard read it; a cut target (past 512 bytes) keeps only its whole segments. */
  readonly subject: NetworkSubject;
  /** Allowed, approved (an approval, approve-once) and never refused by a deny. */
  readonly admitted: boolean;
  /** Why it did not go through: the deny that refused it, or its last verdict. */
  readonly refusedBy: string | null;
  /** A blind tunnel's first bytes (its outcome's `protocol`). */
  readonly protocol: string | null;
}

interface Tracked {
  session: string;
  seq: number;
  journal: number;
  ts: string;
  target: string;
  subject: NetworkSubject;
  allowed: boolean;
  denied: string | null;
  verdict: string;
  held: boolean;
  protocol: string | null;
}

interface Approval {
  readonly id: string;
  readonly session: string | null;
  readonly ts: string;
  readonly pattern: NetworkPattern;
}

/**
 * Reads journal records into the network requests they decided (`trajgate learn`). A request
 * is named by its request id (the seq of its first event record) within its journal; each
 * judgement of it counts: admitted when one let it through — ALLOW, or marked approved (an
 * allowlist entry, an approval, approve-once) — unless a deny refused it, which always wins.
 * An approval an operator gave after a refusal (and did not revoke) admits the requests before
 * it that its pattern covers, for its session or all: that is the operator's ratification.
 * Held requests a deny answered, and REVIEW or PAUSE never approved, stay refused.
 */
export class RequestLog {
  readonly #requests = new Map<string, Tracked>();
  readonly #approvals = new Map<string, Approval>();
  /** Targets that could not be read as network targets (an old or hand-made line). */
  unreadable = 0;

  add(record: JournalRecord, journal: number): void {
    switch (record.type) {
      case 'event':
        if (record.kind === 'network') this.#event(record, journal);
        return;
      case 'outcome': {
        const found = this.#requests.get(`${journal}:${record.rid}`);
        if (found !== undefined && record.protocol !== undefined) found.protocol = record.protocol;
        return;
      }
      case 'resume':
        if (record.once !== undefined) this.#once(record.session, record.once, journal);
        return;
      case 'approve':
        this.#approve(record.id ?? `a${record.seq}`, record);
        return;
      case 'revoke':
        this.#approvals.delete(record.id);
        return;
      default:
    }
  }

  /** Every request read, oldest first within each journal. */
  requests(): LearnedRequest[] {
    const out: LearnedRequest[] = [];
    for (const r of this.#requests.values()) {
      const admitted =
        r.denied === null && (r.allowed || this.#ratified(r.session, r.ts, r.subject));
      out.push({
        session: r.session,
        seq: r.seq,
        journal: r.journal,
        ts: r.ts,
        target: r.target,
        subject: r.subject,
        admitted,
        refusedBy: admitted ? null : (r.denied ?? (r.held ? 'held, never released' : r.verdict)),
        protocol: r.protocol,
      });
    }
    return out;
  }

  #event(record: Extract<JournalRecord, { type: 'event' }>, journal: number): void {
    const rid = record.rid ?? record.seq;
    const key = `${journal}:${rid}`;
    let r = this.#requests.get(key);
    if (r === undefined) {
      const subject = subjectOf(record.target, record.method, record.targetBytes !== undefined);
      if (subject === null) {
        this.unreadable++;
        return;
      }
      r = {
        session: record.session,
        seq: rid,
        journal,
        ts: record.ts,
        target: record.target,
        subject,
        allowed: false,
        denied: null,
        verdict: '',
        held: false,
        protocol: null,
      };
      this.#requests.set(key, r);
    }
    // A held record was not judged: the judgement after the resume (or none, after a deny) is.
    r.held = record.held === true;
    if (r.held) return;
    r.verdict = record.boundary === null ? record.verdict : `${record.verdict}: ${record.boundary}`;
    if (record.denied !== undefined) r.denied = record.denied;
    else if (record.verdict === 'ALLOW' || record.approved) r.allowed = true;
  }

  /** `once`: the rids forwarded as approved; `true` (older journals): every held one. */
  #once(session: string, once: true | readonly number[], journal: number): void {
    const rids = once === true ? null : new Set(once);
    for (const [key, r] of this.#requests) {
      if (r.session !== session || r.journal !== journal) continue;
      if (rids === null ? r.held : rids.has(Number(key.slice(key.indexOf(':') + 1)))) {
        r.allowed = r.denied === null;
        r.held = false;
      }
    }
  }

  #approve(id: string, record: Extract<JournalRecord, { type: 'approve' }>): void {
    if (record.kind !== 'network') return;
    let pattern: NetworkPattern;
    try {
      pattern = parseNetworkPattern(record.pattern);
    } catch {
      return;
    }
    this.#approvals.set(id, { id, session: record.session, ts: record.ts, pattern });
  }

  /** An approval given at or after `ts`, still standing, covers it. */
  #ratified(session: string, ts: string, subject: NetworkSubject): boolean {
    const at = Date.parse(ts);
    for (const a of this.#approvals.values()) {
      if (a.session !== null && a.session !== session) continue;
      if (Date.parse(a.ts) < at) continue;
      if (matchesNetwork(a.pattern, subject)) return true;
    }
    return false;
  }
}

/**
 * The subject the guard judged; null for a target it could not have read. A cut target's
 * last segment may be partial: only the whole segments before it are known to be its path.
 */
function subjectOf(
  target: string,
  method: string | undefined,
  cut: boolean,
): NetworkSubject | null {
  let subject: NetworkSubject;
  try {
    subject = parseNetworkTarget(target, method);
  } catch {
    return null;
  }
  if (!cut || subject.path === null) return subject;
  const path = subject.path.slice(0, subject.path.lastIndexOf('/') + 1);
  return { ...subject, path: path === '' ? '/' : path };
}
