import { TrajgateError } from '../errors.js';
import type { ToolMark } from '../event/event.js';
import type { ToolDefinitionView } from '../event/tool-definitions.js';
import { listDigest } from '../event/tool-definitions.js';
import { diffSummary, diffTools } from '../event/tool-diff.js';
import type { ToolsRecord } from '../journal/records.js';
import type { Pinned, ServerDump, ToolPinsDump } from '../review/tool-pins-dump.js';
import type { ToolChangeView, ToolPinsView } from '../wire.js';

/** A list sessions were shown that differs from the pins: its change against them now. */
interface Pending {
  change: ToolChangeView;
  summary: string;
  readonly tools: readonly ToolDefinitionView[];
  readonly complete: boolean;
  /** Sessions shown it (each journaled once). */
  readonly sessions: Set<string>;
}

interface ServerPins {
  pinned: Pinned | null;
  readonly pending: Map<string, Pending>;
}

/** The digest of no tools: what a server whose lists were never pinned is compared with. */
export const NOTHING_PINNED = listDigest([]);

/**
 * Pinned tool definitions per server, the lists seen since that differ, and the sessions
 * shown one (marked: their next event pauses, boundary `tool-changed`). Changed only by
 * records, as written or read back (`apply`), so a restart rebuilds the same state. A pending
 * list's change is always against the pins now: a pin diffs every pending list again, and
 * one that no longer differs is pending no more, its sessions' marks cleared.
 */
export class ToolPinState {
  readonly #servers = new Map<string, ServerPins>();
  /** Per session, per server, the digest of the changed list it was shown. */
  readonly #marks = new Map<string, Map<string, string>>();
  readonly #onPinned: ((server: string, pinned: Pinned) => void)[] = [];

  /** Told each time a server's pins change (annotations as hints: gateway/tool-hints.ts). */
  onPinned(listener: (server: string, pinned: Pinned) => void): void {
    this.#onPinned.push(listener);
  }

  /** A record written or read back: `tools` records, and resumes (which clear marks). */
  apply(record: { readonly type: string; readonly ts?: string }): void {
    if (record.type === 'resume') {
      const r = record as { session?: unknown; once?: unknown };
      // An approve-once leaves the session paused: its mark stays.
      if (typeof r.session === 'string' && !Array.isArray(r.once)) this.#marks.delete(r.session);
      return;
    }
    if (record.type !== 'tools') return;
    const r = checked(record as ToolsRecord);
    if (r.change === 'pinned') {
      const ts = record.ts ?? new Date().toISOString();
      this.#pin(r.server, { digest: r.digest, pinnedAt: ts, by: r.by, tools: r.tools });
    } else {
      this.#pending(r.server, r.digest, r.tools, r.complete !== false).sessions.add(r.session);
      this.#mark(r.session, r.server, r.digest);
    }
  }

  /** The server's pins, or null when none are (never seen, or its first list malformed). */
  pinned(server: string): Pinned | null | undefined {
    return this.#servers.get(server)?.pinned;
  }

  /** Whether `server` was ever seen. */
  known(server: string): boolean {
    return this.#servers.has(server);
  }

  /** Whether `session` was already shown list `digest` of `server` (journaled once each). */
  shown(server: string, digest: string, session: string): boolean {
    return this.#servers.get(server)?.pending.get(digest)?.sessions.has(session) === true;
  }

  /** A pending list of `server`: its change, tools, whether whole, who was shown it. */
  pending(server: string, digest: string): Readonly<Pending> | undefined {
    return this.#servers.get(server)?.pending.get(digest);
  }

  /** The changed list a session was shown and not yet let go on: its next event carries it. */
  markOf(session: string): ToolMark | undefined {
    const marks = this.#marks.get(session);
    if (marks === undefined) return undefined;
    for (const [server, digest] of marks) {
      const what = this.pending(server, digest)?.summary;
      return what === undefined ? { server, digest } : { server, digest, what };
    }
    return undefined;
  }

  /** The change of a pending list (a pause record carries it). */
  change(server: string, digest: string): ToolChangeView | undefined {
    return this.pending(server, digest)?.change;
  }

  view(server: string): ToolPinsView | undefined {
    const s = this.#servers.get(server);
    if (s === undefined) return undefined;
    const p = s.pinned;
    return {
      server,
      digest: p?.digest ?? NOTHING_PINNED,
      pinnedAt: p?.pinnedAt ?? '',
      by: p?.by ?? '',
      tools: p?.tools ?? [],
      pending: [...s.pending.values()].map((q) => q.change),
    };
  }

  views(): ToolPinsView[] {
    return [...this.#servers.keys()].sort().map((server) => this.view(server) as ToolPinsView);
  }

  dump(): ToolPinsDump {
    const servers = [...this.#servers].map(([server, s]) => {
      const pending = [...s.pending].map(([digest, p]) => ({
        digest,
        tools: p.tools,
        complete: p.complete,
        sessions: [...p.sessions],
      }));
      return [server, { pinned: s.pinned, pending }] as [string, ServerDump];
    });
    const marks = [...this.#marks].map(([id, m]) => [id, [...m]] as [string, [string, string][]]);
    return { servers, marks };
  }

  /** A snapshot's pins, into a fresh state (before the records after it are applied). */
  restore(dump: ToolPinsDump): void {
    for (const [server, { pinned, pending }] of dump.servers) {
      if (pinned !== null) this.#pin(server, pinned);
      else this.#server(server);
      for (const p of pending)
        for (const session of p.sessions)
          this.#pending(server, p.digest, p.tools, p.complete).sessions.add(session);
    }
    for (const [session, marks] of dump.marks)
      for (const [server, digest] of marks) this.#mark(session, server, digest);
  }

  #server(server: string): ServerPins {
    let s = this.#servers.get(server);
    if (s === undefined) this.#servers.set(server, (s = { pinned: null, pending: new Map() }));
    return s;
  }

  #pin(server: string, pinned: Pinned): void {
    const s = this.#server(server);
    s.pinned = pinned;
    for (const [digest, p] of s.pending) {
      const diff = diffTools(pinned.tools, p.tools, p.complete);
      if (diff.length > 0) {
        p.change = { server, digest, pinned: pinned.digest, diff };
        p.summary = diffSummary(diff);
        continue;
      }
      s.pending.delete(digest);
      for (const session of p.sessions) this.#unmark(session, server, digest);
    }
    for (const listener of this.#onPinned) listener(server, pinned);
  }

  #pending(
    server: string,
    digest: string,
    tools: readonly ToolDefinitionView[],
    complete: boolean,
  ): Pending {
    const s = this.#server(server);
    let p = s.pending.get(digest);
    if (p !== undefined) return p;
    const diff = diffTools(s.pinned?.tools ?? [], tools, complete);
    const change = { server, digest, pinned: s.pinned?.digest ?? NOTHING_PINNED, diff };
    p = { change, summary: diffSummary(diff), tools, complete, sessions: new Set() };
    s.pending.set(digest, p);
    return p;
  }

  #mark(session: string, server: string, digest: string): void {
    let marks = this.#marks.get(session);
    if (marks === undefined) this.#marks.set(session, (marks = new Map()));
    marks.set(server, digest);
  }

  #unmark(session: string, server: string, digest: string): void {
    const marks = this.#marks.get(session);
    if (marks?.get(server) !== digest) return;
    marks.delete(server);
    if (marks.size === 0) this.#marks.delete(session);
  }
}

/** A `tools` record as read back: the fields its change needs, of the right types. */
function checked(r: ToolsRecord): ToolsRecord {
  const bad = (why: string) => new TrajgateError('E_JOURNAL_CORRUPT', `tools record ${why}`);
  if (typeof r.server !== 'string' || typeof r.digest !== 'string')
    throw bad('needs a "server" and a "digest"');
  if (!Array.isArray(r.tools) || !r.tools.every(isTool))
    throw bad('needs "tools", a list of tool definitions');
  if (r.change === 'pinned') {
    if (typeof r.by !== 'string') throw bad('(pinned) needs a "by"');
  } else if (r.change === 'changed') {
    if (typeof r.session !== 'string') throw bad('(changed) needs a "session"');
  } else throw bad('has a "change" other than pinned or changed');
  return r;
}

const isTool = (t: unknown): t is ToolDefinitionView =>
  typeof t === 'object' &&
  t !== null &&
  typeof (t as ToolDefinitionView).name === 'string' &&
  typeof (t as ToolDefinitionView).digest === 'string';
