/**
 * Text for chat incoming webhooks (Slack, and Mattermost which accepts Slack's format). Parts
 * that come from agents (session names, targets) are made inert: a target must not become a
 * mention, a link, a link preview the chat server fetches (that would send the refused
 * request after all), or a second line.
 */
import { printable } from '../event/printable.js';

/** Joins what it sits in without showing: breaks `@here`, `](` and autolinks. */
const JOINER = '\u2060';

/** Chat servers link bare domains too: `a[.]b`. */
const defangHost = (host: string) => host.replace(/\./g, '[.]');

/** `text` printable, at most `max` characters: past that its first `max - 1` and an ellipsis. */
export function shortLine(text: string, max: number): string {
  const s = printable(text);
  const chars = [...s];
  return chars.length > max ? chars.slice(0, max - 1).join('') + '…' : s;
}

/** Slack's required escapes (Mattermost's Markdown renders the entities back). */
export function escapeChat(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * An agent's text for a chat line: unprintable characters replaced, at most `max` characters
 * (an ellipsis says it was cut), escaped; `@` cannot mention (Mattermost notifies `@channel`
 * in plain text), `[x](y)` cannot link (Mattermost Markdown), and a URL is written
 * `scheme[:]//host[.]name` so that no chat server links or fetches it.
 */
export function chatSafe(text: string, max: number): string {
  return escapeChat(shortLine(text, max))
    .replace(/@/g, `@${JOINER}`)
    .replace(/:\/\/([^/?#\s]*)/g, (_, host: string) => `[:]//${defangHost(host)}`)
    .replace(/\]\(/g, `]${JOINER}(`);
}

/**
 * A network target or pattern for a chat line: chatSafe, and a tunnel's `host:port` (no
 * scheme) defanged like a URL's host. Paths keep their dots.
 */
export function chatTarget(text: string, max: number): string {
  const safe = chatSafe(text, max);
  if (text.includes('://')) return safe;
  const m = /^((?:[A-Za-z]+ )?)([^/\s]*)/.exec(safe) as RegExpExecArray;
  const [whole, lead = '', host = ''] = m;
  return (lead + defangHost(host) + safe.slice(whole.length)).replace(/\]\(/g, `]${JOINER}(`);
}

/**
 * A command line for a chat line: chatSafe, and every dot between two letters or digits
 * defanged (`curl evil[.]example/x`, `main[.]js`): a command names hosts anywhere in it, and a
 * chat server that linked one would fetch it.
 */
export function chatCommand(text: string, max: number): string {
  return chatSafe(text, max).replace(/([A-Za-z0-9])\.(?=[A-Za-z0-9])/g, '$1[.]');
}

/** `<url|label>`: a link in Slack's format, which Mattermost turns into Markdown. */
export function chatLink(url: string, label: string): string {
  // Neither format lets `|` or `>` appear inside the URL part.
  const href = url.replace(/\|/g, '%7C').replace(/>/g, '%3E').replace(/</g, '%3C');
  return `<${href}|${escapeChat(label)}>`;
}
