import { hostname } from 'node:os';
import type { HostPort } from '../config/formats.js';
import type { EventRecord, PauseRecord } from '../journal/records.js';
import { chatCommand, chatLink, chatSafe, chatTarget } from './chat-text.js';
import type { DecisionLinks, PauseLinks } from './decision-links.js';
import { resolvedSuffix } from './resolved-text.js';
import { toolChangeSummary } from './tool-change-text.js';

/** Bounds on what agents put in a chat line (session names, targets, patterns). */
const SESSION_CHARS = 80;
const TARGET_CHARS = 200;
const COMMAND_CHARS = 300;

/**
 * The review page's base URL: `notify.pageUrl` (made to end in `/`), or the admin listener's
 * own address; a wildcard address (0.0.0.0, ::) names no host, so this machine's host name
 * stands in (docs/notifications.md: set notify.pageUrl when people reach trajgate by another name).
 */
export function pageBase(configured: string | undefined, admin: HostPort): URL {
  if (configured !== undefined) {
    const url = new URL(configured);
    if (!url.pathname.endsWith('/')) url.pathname += '/';
    url.search = '';
    url.hash = '';
    return url;
  }
  let host = admin.host;
  if (host === '0.0.0.0' || host === '::' || host === '') host = hostname();
  if (host.includes(':')) host = `[${host}]`;
  try {
    return new URL(`http://${host}:${admin.port}/`);
  } catch {
    return new URL(`http://127.0.0.1:${admin.port}/`);
  }
}

/** The page's route to one session (src/review/page/app.ts: `#/session/ID`). */
export function sessionUrl(base: URL, session: string): string {
  return new URL(`#/session/${encodeURIComponent(session)}`, base).href;
}

/** The page's route to one event: its session with the event selected (`#/session/ID/event/SEQ`). */
export function eventUrl(base: URL, session: string, seq: number): string {
  return new URL(`#/session/${encodeURIComponent(session)}/event/${seq}`, base).href;
}

/** A decision a sequence rule named, for its chat line: both events of the pair, linked. */
export interface RulePair {
  readonly name: string;
  readonly eventUrl: string;
  /** The earlier event (absent for a volume rule); `event` when the gateway still has it. */
  readonly after?: { readonly seq: number; readonly url: string; readonly event?: EventRecord };
}

/** The pair of a decision named by a sequence rule, or undefined. */
export function rulePair(
  base: URL,
  e: EventRecord,
  earlier: EventRecord | undefined,
): RulePair | undefined {
  if (!e.rule) return undefined;
  const { name, after } = e.rule;
  const url = eventUrl(base, e.session, e.seq);
  if (after === undefined) return { name, eventUrl: url };
  const event = earlier?.seq === after ? earlier : undefined;
  return {
    name,
    eventUrl: url,
    after: { seq: after, url: eventUrl(base, e.session, after), event },
  };
}

/** The payload's URLs of a rule's pair: the trigger's event and the earlier one. */
const pairUrls = (pair: RulePair | undefined) =>
  pair ? { eventUrl: pair.eventUrl, ...(pair.after ? { afterUrl: pair.after.url } : {}) } : {};

/**
 * Webhook payloads: the pause record (or `{session, event}` for a REVIEW) plus `text`, one line a
 * Slack or Mattermost incoming webhook shows as it is, `url`, the review page for the
 * session, and for a pause the decision `links`.
 */
export class Notices {
  constructor(
    private readonly base: () => URL,
    private readonly links: DecisionLinks,
    /** An event the gateway still keeps, by session and seq (Review.earlier). */
    private readonly earlier: (session: string, seq: number) => EventRecord | undefined = () =>
      undefined,
  ) {}

  pause(record: PauseRecord): object {
    const base = this.base();
    const url = sessionUrl(base, record.session);
    const links = this.links.forPause(record, base);
    const pair = rulePair(base, record.trigger, record.after ?? this.#earlier(record.trigger));
    const text = pauseText(record, url, links, pair);
    return { ...record, text, url, ...pairUrls(pair), links };
  }

  review(event: EventRecord): object {
    const base = this.base();
    const url = sessionUrl(base, event.session);
    const pair = rulePair(base, event, this.#earlier(event));
    return {
      session: event.session,
      event,
      text: reviewText(event, url, pair),
      url,
      ...pairUrls(pair),
    };
  }

  #earlier(e: EventRecord): EventRecord | undefined {
    const after = e.rule?.after;
    return after === undefined ? undefined : this.earlier(e.session, after);
  }
}

/** What was asked: `GET http[:]//…`, a path, or a command's folder and line (`/ws: npm test`). */
const asked = (e: EventRecord) =>
  chatTarget(`${e.method ? `${e.method} ` : ''}${e.target}${resolvedSuffix(e)}`, TARGET_CHARS) +
  (e.command === undefined ? '' : `: ${chatCommand(e.command, COMMAND_CHARS)}`);
const session = (id: string) => `"${chatSafe(id, SESSION_CHARS)}"`;
const at = (e: EventRecord) =>
  e.boundary ? ` on ${chatSafe(e.boundary, 40)} (crossing ${e.count})` : '';
// With its date: links outlive a day's clock time (they last while the session stays paused).
const clock = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
const what = (e: EventRecord) => `${chatSafe(e.kind, 40)} ${asked(e)}`;
/** `by rule NAME: #57 network GET … after #41 read …`, each seq a link to the page's event. */
const byRule = (e: EventRecord, pair: RulePair) => {
  const a = pair.after;
  const after = a
    ? ` after ${chatLink(a.url, `#${a.seq}`)}${a.event ? ` ${what(a.event)}` : ''}`
    : '';
  return ` by rule ${chatSafe(pair.name, 80)}: ${chatLink(pair.eventUrl, `#${e.seq}`)} ${what(e)}${after}`;
};
/** What decided, then what was asked (a command with its kind): by a rule, or a crossing. */
const decided = (e: EventRecord, pair: RulePair | undefined) =>
  pair ? byRule(e, pair) : `${at(e)}: ${e.command === undefined ? asked(e) : what(e)}`;

export function pauseText(
  record: PauseRecord,
  url: string,
  links: PauseLinks,
  pair?: RulePair,
): string {
  const t = record.trigger;
  const n = record.held.length;
  const held = n === 0 ? 'refused' : `${n} request${n === 1 ? '' : 's'} held`;
  const suggestion = links.suggestion
    ? ` Suggested approval: ${chatTarget(links.suggestion.pattern, TARGET_CHARS)}.`
    : '';
  const tools = record.toolChange;
  // A tool's name may read as a domain (`fetch.example`): every inner dot defanged.
  const changed = tools
    ? ` Tools changed by server ${chatCommand(tools.server, SESSION_CHARS)}: ${toolChangeSummary(tools, chatCommand)}; pin after review.`
    : '';
  const actions = [
    chatLink(url, 'Review'),
    ...(links.approveOnce ? [chatLink(links.approveOnce, 'Approve once')] : []),
    ...(links.approvePattern ? [chatLink(links.approvePattern, 'Approve suggestion')] : []),
    ...(links.approveReset ? [chatLink(links.approveReset, 'Approve and reset counts')] : []),
    ...(links.topUp
      ? [chatLink(links.topUp.url, `Top up ${links.topUp.budget} +${links.topUp.amount}`)]
      : []),
    chatLink(links.deny, 'Deny'),
  ];
  return (
    `trajgate: session ${session(record.session)} paused${decided(t, pair)}; ${held}, ` +
    `links valid until ${clock(links.expiresAt)}.${changed}${suggestion} ${actions.join(' · ')}`
  );
}

export function reviewText(event: EventRecord, url: string, pair?: RulePair): string {
  return (
    `trajgate: session ${session(event.session)} flagged for review${decided(event, pair)}. ` +
    chatLink(url, 'Review')
  );
}
