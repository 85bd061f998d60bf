import { TrajgateError } from '../errors.js';
import { TOOL_CHANGED } from '../event/own-boundaries.js';
import type { ToolDefinitionView } from '../event/tool-definitions.js';
import { listDigest, readToolList } from '../event/tool-definitions.js';
import { diffTools } from '../event/tool-diff.js';
import type { ToolListObserver, ToolListSeen } from '../ingress/tool-lists.js';
import type { ToolsRecord, Unstamped } from '../journal/records.js';
import type { JournalWriter } from '../journal/writer.js';
import { operate } from '../review/api-rules.js';
import type { Review } from '../review/review.js';
import type { Sessions } from '../review/sessions.js';
import type { ToolPinsView } from '../wire.js';
import type { ToolPinState } from './tool-pin-state.js';

/** `POST /api/tools/:server/approve`: what was pinned and the sessions it resumed. */
export interface ToolsApproved {
  readonly server: string;
  readonly digest: string;
  readonly resumed: string[];
}

/**
 * Pins each server's tool definitions (ToolListObserver: every `tools/list` answer the bridge
 * reads comes here before the agent is given it). The first list seen is pinned (`first-use`);
 * a later one that differs is journaled once per session and list, and marks the session: its
 * next event pauses (`tool-changed`). An operator pins a pending list after review (`approve`),
 * which resumes the sessions it paused. Every change is journaled (and synced) before it takes
 * effect: a journal that cannot be written refuses the answer (E_JOURNAL_WRITE), nothing changed.
 */
export class ToolPins implements ToolListObserver {
  constructor(
    private readonly journal: JournalWriter,
    readonly state: ToolPinState,
    private readonly desk: { readonly sessions: Sessions; readonly review: Review },
  ) {}

  seen(list: ToolListSeen): Promise<void> {
    try {
      this.#seen(list);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  #seen({ server, session, tools, complete }: ToolListSeen): void {
    const read = readToolList(tools);
    // The first list is trusted as it comes, unless it is malformed: then nothing is pinned.
    if (!this.state.known(server) && read.malformed === 0) {
      this.#write({
        type: 'tools',
        change: 'pinned',
        server,
        digest: read.digest,
        by: 'first-use',
        tools: read.tools,
      });
      return;
    }
    const pinned = this.state.pinned(server);
    const diff = diffTools(pinned?.tools ?? [], read.tools, complete);
    if (diff.length === 0 || this.state.shown(server, read.digest, session)) return;
    this.#write({
      type: 'tools',
      change: 'changed',
      server,
      session,
      digest: read.digest,
      pinned: pinned?.digest ?? listDigest([]),
      diff,
      tools: read.tools,
      ...(complete ? {} : { complete: false as const }),
    });
  }

  list(): ToolPinsView[] {
    return this.state.views();
  }

  view(server: string): ToolPinsView {
    const view = this.state.view(server);
    if (view === undefined) throw unknownServer(server, this.state.views());
    return view;
  }

  /**
   * Pins the pending list `digest` of `server` (a page: over the pins), by an operator; then
   * resumes each session that list paused. Throws E_UNKNOWN_SERVER, E_NOT_PENDING (naming the
   * digests that are), E_JOURNAL_WRITE (nothing pinned).
   */
  approve(server: string, digest: unknown, by: string): ToolsApproved {
    const view = this.view(server);
    if (typeof digest !== 'string' || digest === '')
      throw new TrajgateError(
        'E_BAD_FIELD',
        'field "digest" is required: the digest of the pending list to pin (trajgate tools SERVER)',
      );
    const pending = this.state.pending(server, digest);
    if (pending === undefined) {
      const digests = view.pending.map((p) => p.digest);
      throw new TrajgateError(
        'E_NOT_PENDING',
        `no pending tool list ${digest} for ${JSON.stringify(server)} (pending: ${digests.join(', ') || 'none'})`,
        digests,
      );
    }
    const tools = pending.complete
      ? pending.tools
      : merged(this.state.pinned(server)?.tools, pending.tools);
    const paused = [...pending.sessions].filter((s) => this.#pausedOn(s, server, digest));
    operate(() =>
      this.#write({
        type: 'tools',
        change: 'pinned',
        server,
        digest: listDigest(tools),
        by,
        tools,
      }),
    );
    const resumed = paused.filter((s) => this.desk.sessions.isPaused(s));
    for (const session of resumed) operate(() => this.desk.sessions.resume(session, { by }));
    return { server, digest, resumed };
  }

  /** Whether the session is paused by this list (its pause's trigger names it). */
  #pausedOn(session: string, server: string, digest: string): boolean {
    if (!this.desk.sessions.isPaused(session)) return false;
    const trigger = this.desk.review.pauseRecord(session)?.trigger;
    const change = trigger?.toolChange;
    return (
      trigger?.boundary === TOOL_CHANGED && change?.server === server && change.digest === digest
    );
  }

  /** Journaled and synced, then applied as a restart would apply it. */
  #write(record: Unstamped<ToolsRecord>): void {
    const ts = Date.now();
    this.journal.append(record, { ts, sync: true });
    this.state.apply({ ...record, ts: this.journal.iso(ts) });
  }
}

/** The pins with a page's tools over them (a page removes nothing). */
function merged(
  pinned: readonly ToolDefinitionView[] = [],
  page: readonly ToolDefinitionView[],
): ToolDefinitionView[] {
  const names = new Set(page.map((t) => t.name));
  return [...pinned.filter((t) => !names.has(t.name)), ...page];
}

function unknownServer(server: string, known: readonly ToolPinsView[]): TrajgateError {
  const names = known.map((v) => v.server).join(', ') || 'none has sent a tools/list yet';
  return new TrajgateError(
    'E_UNKNOWN_SERVER',
    `no tool server ${JSON.stringify(server)} (servers: ${names})`,
  );
}
