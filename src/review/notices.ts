import { hostname } from 'node:os';
import type { HostPort } from '../config/formats.js';
import type { PauseRecord, Summary } from '../journal/records.js';
import { chatLink, chatSafe, chatTarget } from './chat-text.js';
import type { DecisionLinks, PauseLinks } from './decision-links.js';

/** Bounds on what agents put in a chat line (session names, targets, patterns). */
const SESSION_CHARS = 80;
const TARGET_CHARS = 200;

/**
 * The review page's base URL: `notify.pageUrl` (made to end in `/`), or the admin listener's
 * own address; a wildcard address (0.0.0.0, ::) names no host, so this machine's host name
 * stands in (README: set notify.pageUrl when people reach trajgate by another name).
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

/**
 * Webhook payloads: the pause record (or `{event}` for a REVIEW) plus `text`, one line a
 * Slack or Mattermost incoming webhook shows as it is, `url`, the review page for the
 * session, and for a pause the decision `links`.
 */
export class Notices {
  constructor(
    private readonly base: () => URL,
    private readonly links: DecisionLinks,
  ) {}

  pause(record: PauseRecord): object {
    const base = this.base();
    const url = sessionUrl(base, record.session);
    const links = this.links.forPause(record, base);
    return { ...record, text: pauseText(record, url, links), url, links };
  }

  review(event: Summary): object {
    const url = sessionUrl(this.base(), event.session);
    return { event, text: reviewText(event, url), url };
  }
}

const asked = (e: Summary) =>
  chatTarget(`${e.method ? `${e.method} ` : ''}${e.target}`, TARGET_CHARS);
const session = (id: string) => `"${chatSafe(id, SESSION_CHARS)}"`;
const at = (e: Summary) =>
  e.boundary ? ` on ${chatSafe(e.boundary, 40)} (crossing ${e.count})` : '';
const clock = (iso: string) => `${iso.slice(11, 19)} UTC`;

export function pauseText(record: PauseRecord, url: string, links: PauseLinks): string {
  const t = record.trigger;
  const n = record.held.length;
  const held = n === 0 ? 'refused' : `${n} request${n === 1 ? '' : 's'} held`;
  const suggestion = links.suggestion
    ? ` Suggested approval: ${chatTarget(links.suggestion.pattern, TARGET_CHARS)}.`
    : '';
  const actions = [
    chatLink(url, 'Review'),
    chatLink(links.approveOnce, 'Approve once'),
    ...(links.approvePattern ? [chatLink(links.approvePattern, 'Approve suggestion')] : []),
    chatLink(links.deny, 'Deny'),
  ];
  return (
    `trajgate: session ${session(record.session)} paused${at(t)}: ${asked(t)}; ${held}, ` +
    `links valid until ${clock(links.expiresAt)}.${suggestion} ${actions.join(' · ')}`
  );
}

export function reviewText(event: Summary, url: string): string {
  return (
    `trajgate: session ${session(event.session)} flagged for review${at(event)}: ` +
    `${asked(event)}. ${chatLink(url, 'Review')}`
  );
}
