import type { EventRecord } from '../journal/records.js';
import type { SessionView } from '../review/api.js';
import { HANDSHAKE_HINT } from '../review/handshakes.js';
import { resolvedSuffix } from '../review/resolved-text.js';
import type { EventsPage, PausedAgain } from '../wire.js';
import { table } from './table.js';

/**
 * After the boundary: a sequence rule's earlier event (` after #41`), or the budget a
 * `budget` pause names (` calls`).
 */
const after = (
  rule: { name: string; after?: number } | null | undefined,
  boundary: string | null,
) =>
  rule == null
    ? ''
    : rule.after !== undefined
      ? ` after #${rule.after}`
      : rule.name !== boundary
        ? ` ${rule.name}`
        : '';

/** The operator commands' tables (cells made safe for a terminal by `table`). */
export function sessionsTable(sessions: SessionView[]): string {
  if (sessions.length === 0) return 'no sessions yet';
  return table(
    ['SESSION', 'STATE', 'COUNTS', 'PAUSED AT', 'HELD', 'LAST ACTIVITY', 'CREDENTIALS'],
    sessions.map((s) => [
      s.id,
      s.state === 'paused'
        ? `PAUSED (${s.pausedBy ?? '?'}${after(s.pausedRule, s.pausedBy)})`
        : s.state === 'flagged'
          ? `FLAGGED (${s.flagged} review${s.flagged === 1 ? '' : 's'})`
          : 'active',
      Object.entries(s.counts)
        .map(([b, n]) => `${b}=${n}`)
        .join(' ') || '-',
      s.pausedAt ?? '-',
      String(s.held),
      s.lastActivity ?? '-',
      s.credentialNames.join(' ') || '-',
    ]),
  );
}

/** Characters of a command line shown in a table cell (`--json` has it as journaled). */
const COMMAND_CHARS = 120;

/** A command event's command line after its folder, ` $ npm test`, cut to one short line. */
function ran(e: EventRecord): string {
  if (e.command === undefined) return '';
  const chars = [...e.command];
  const cut = chars.length > COMMAND_CHARS || e.commandBytes !== undefined;
  return ` $ ${chars.slice(0, COMMAND_CHARS).join('')}${cut ? '…' : ''}`;
}

/** A session's events, and the TLS handshakes its agent refused among them (with what to do). */
export function eventsTable(events: EventsPage['events']): string {
  if (events.length === 0) return 'no events';
  return table(
    ['SEQ', 'TIME', 'VERDICT', 'KIND', 'TARGET', 'REASON'],
    events.map((e) =>
      e.type === 'refusal'
        ? [
            String(e.seq),
            e.ts,
            `REFUSED (TLS: ${e.handshake})`,
            'tls',
            e.target,
            `${e.reason}; ${HANDSHAKE_HINT}`,
          ]
        : eventRow(e),
    ),
  );
}

/** The page with each refused handshake saying what to do about it (`hint`), for --json. */
export function withHints(page: EventsPage): EventsPage {
  const events = page.events.map((e) =>
    e.type === 'refusal' ? { ...e, hint: HANDSHAKE_HINT } : e,
  );
  return { ...page, events };
}

function eventRow(e: EventRecord): string[] {
  return [
    String(e.seq),
    e.ts,
    e.verdict === 'ALLOW'
      ? 'ALLOW'
      : `${e.verdict}${e.boundary ? `: ${e.boundary}` : ''}${after(e.rule, e.boundary)}`,
    e.kind,
    `${e.method ? `${e.method} ` : ''}${e.target}${resolvedSuffix(e)}${ran(e)}`,
    e.reason,
  ];
}

/** After a resume: what it let go paused the session again at once (seq, verdict, target). */
export function pausedAgainLine(session: string, p: PausedAgain): string {
  const t = p.trigger;
  return (
    `but #${t.seq} ${t.kind}${t.method ? ` ${t.method}` : ''} ${t.target} paused ${session} again at once: ` +
    `PAUSE${p.boundary ? `: ${p.boundary}` : ''} (${p.reason}); decide again (trajgate events ${session})`
  );
}
