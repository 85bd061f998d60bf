import type { IncomingMessage, ServerResponse } from 'node:http';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { readBody } from '../http/body.js';
import type { EventRecord, PauseRecord } from '../journal/records.js';
import type { ToolChangeView } from '../wire.js';
import type { Suggestion } from '../guard/suggest.js';
import type { Held } from '../action/hold.js';
import type { Claims, Decided, DecisionAction, DecisionLinks } from './decision-links.js';
import type { HeldBrief } from './sessions.js';
import { describeHeld } from './sessions.js';
import { printable } from '../event/printable.js';
import { shortLine } from './chat-text.js';
import { toolChangeSummary } from './tool-change-text.js';
import { sendError, sendJson } from '../http/json.js';

/** One page, no script, nothing loaded from elsewhere; the form posts back to its own URL. */
const HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-robots-tag': 'noindex',
};

const STYLE =
  'body{font:15px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em;color:#222}' +
  'dt{font-weight:600;margin-top:.6em}dd{margin:0;overflow-wrap:anywhere;font-family:ui-monospace,monospace}' +
  'button{font:inherit;padding:.5em 1.4em;margin-top:1.2em;cursor:pointer}.note{color:#555}' +
  'ul{margin:0;padding-left:1.2em}.covered{font-weight:600}';

const html = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * `/decide/TOKEN` on the admin listener, without the admin token (the signed token is the
 * whole authority, for one action on one pause). GET (and HEAD) only shows what the link
 * would do with a confirm button, since chat servers fetch links to preview them; POST does
 * it. Browsers get HTML, anything else JSON; a used, expired or altered link says so (410,
 * 410, 403) and nothing is journaled.
 */
export function decideHandler(links: DecisionLinks) {
  return async (req: IncomingMessage, res: ServerResponse, token: string): Promise<void> => {
    const wantsHtml = /\btext\/html\b/.test(req.headers.accept ?? '');
    try {
      if (req.method === 'GET' || req.method === 'HEAD') {
        const { claims, pause, instead } = links.check(token);
        const held = links.held(claims.session).map((h) => ({
          ...h,
          covered: claims.action !== 'once' || instead !== null || links.covers(claims, h),
        }));
        const does = { ...claims, action: instead ?? claims.action };
        if (wantsHtml)
          return sendPage(res, 200, confirmPage(does, pause, held, links.suggestion(pause)));
        const approval = claims.action === 'approve' ? { approval: links.suggestion(pause) } : {};
        return sendJson(res, 200, {
          ...view(claims, pause, held),
          ...approval,
          ...(instead === null ? {} : { instead }),
          confirm: 'POST to this URL',
        });
      }
      if (req.method === 'POST') {
        // A form's body says nothing: read (bounded, 413 past it) and dropped.
        await readBody(req, 4096);
        const decided = links.act(token);
        if (wantsHtml) return sendPage(res, 200, donePage(decided));
        return sendJson(res, 200, decided);
      }
      res.setHeader('allow', 'GET, HEAD, POST');
      throw new TrajgateError('E_METHOD', `${req.method} is not allowed on a decision link`);
    } catch (err) {
      if (!isTrajgateError(err) || err.status === null) throw err;
      if (wantsHtml) return sendPage(res, err.status, errorPage(err));
      return sendError(res, err);
    }
  };
}

/** A request the session holds, and whether the link's action lets it go as it says. */
type Shown = Held & { readonly covered: boolean };

function view(claims: Claims, pause: PauseRecord, held: readonly Shown[]) {
  const { trigger } = pause;
  return {
    session: claims.session,
    action: claims.action,
    trigger: {
      seq: trigger.seq,
      method: trigger.method ?? null,
      target: trigger.target,
      ...(trigger.command === undefined ? {} : { command: trigger.command }),
    },
    boundary: pause.boundary,
    reason: pause.reason,
    rule: trigger.rule ?? null,
    after: pause.after
      ? { seq: pause.after.seq, method: pause.after.method ?? null, target: pause.after.target }
      : null,
    ...(pause.toolChange ? { toolChange: toolChangeBrief(pause.toolChange) } : {}),
    held: held.length,
    heldRequests: held.map(({ rid, what, bytes, covered }) => ({ rid, what, bytes, covered })),
    ...(claims.action === 'once' ? { once: claims.rids } : {}),
    expiresAt: new Date(claims.expiresAt).toISOString(),
  };
}

/** A changed tool list, short: the server, the digests, each tool's change and fields. */
const toolChangeBrief = (c: ToolChangeView) => ({
  server: c.server,
  digest: c.digest,
  pinned: c.pinned,
  tools: c.diff.map(({ tool, change, fields }) => ({ tool, change, fields })),
});

const requests = (n: number) => `${n} held request${n === 1 ? '' : 's'}`;

/** What approve once does with the requests held now: only those marked go as approved. */
function onceNote(held: readonly Shown[]): string {
  const marked = held.filter((h) => h.covered).length;
  const others = held.length - marked;
  const rest =
    others === 0
      ? ''
      : others === 1
        ? ' The other held request stays held and the session stays paused: it is judged again when the session is resumed.'
        : ` The other ${requests(others)} stay held and the session stays paused: they are judged again when the session is resumed.`;
  if (marked === 0)
    return `The request this link was made for is no longer held: approve once forwards nothing.${rest}`;
  return `Forward the ${marked === 1 ? 'request' : `${marked} requests`} marked as approved, this once.${rest}`;
}

/** What the page confirms: the link's action, or the resume an approve-once link does instead. */
type Does = Omit<Claims, 'action'> & { readonly action: DecisionAction | 'resume' };

function what(
  claims: Does,
  s: Suggestion | null,
  held: readonly Shown[],
  pause: PauseRecord,
): { title: string; note: string } {
  switch (claims.action) {
    case 'once':
      return { title: 'Approve once', note: onceNote(held) };
    case 'approve':
      return {
        title: `Approve ${s?.pattern ?? '(no pattern)'} for this session`,
        note: `Add an approval of ${s?.kind ?? ''} ${JSON.stringify(s?.pattern ?? '')} for this session only and resume it; the ${requests(held.length)} are judged again.`,
      };
    case 'resume':
      return {
        title: 'Approve and resume',
        note: `The request this link was made for is no longer held (its hold timed out and the agent was refused, or its client left), so there is nothing to approve once: resume the session instead, counts kept; the ${requests(held.length)} are judged again.`,
      };
    case 'reset':
      return {
        title: 'Approve and reset counts',
        note: `Forward the request${claims.rids.length === 1 ? '' : 's'} this link was made for (when still held) as approved, this once; then resume the session with its boundary counts reset to zero (approvals kept), so its next unapproved crossing is a REVIEW again, not a pause; any other held request is judged again.`,
      };
    case 'topup': {
      const budget = pause.trigger.rule?.name ?? '';
      return {
        title: `Top up ${budget} by ${claims.amount ?? 0}`,
        note: `Raise this session's limit of budget ${budget} by ${claims.amount ?? 0} in its current window and resume it; the ${requests(held.length)} are judged again, and one past the new limit pauses it again.`,
      };
    }
    case 'deny':
      return {
        title: 'Deny',
        note: `Answer the ${requests(held.length)} 403. The session stays paused until an operator resumes it.`,
      };
  }
}

function confirmPage(
  claims: Does,
  pause: PauseRecord,
  held: readonly Shown[],
  suggestion: Suggestion | null,
): string {
  const { title, note } = what(claims, suggestion, held, pause);
  const t = pause.trigger;
  const target = (e: EventRecord) => `${e.method ? `${e.method} ` : ''}${e.target}`;
  const asked = (e: EventRecord) => `${e.kind} ${target(e)}`;
  // The review page with the event selected (this page is `<page>/decide/TOKEN`).
  const event = (seq: number) =>
    `<a href="../#/session/${html(encodeURIComponent(claims.session))}/event/${seq}">#${seq}</a>`;
  const rule = t.rule;
  const rows: [string, string][] = [
    ['Session', html(claims.session)],
    ['Paused by', rule ? `${event(t.seq)} ${html(asked(t))}` : html(target(t))],
  ];
  // Redacted and bounded as journaled; characters that would not show (or reorder) replaced.
  if (t.command !== undefined) rows.push(['Command', `<code>${html(printable(t.command))}</code>`]);
  if (rule) rows.push(['Rule', html(rule.name)]);
  if (rule?.after !== undefined) {
    const earlier = pause.after ? ` ${html(asked(pause.after))}` : '';
    rows.push(['After', `${event(rule.after)}${earlier}`]);
  }
  const tools = pause.toolChange;
  // What the server wrote is its own: printable, bounded, escaped like the agent's text.
  const inert = (text: string, max: number) => html(shortLine(text, max));
  if (tools)
    rows.push(
      ['Tools changed by', `server ${inert(tools.server, 80)}`],
      ['Tools', toolChangeSummary(tools, inert)],
      [
        'Pin after review',
        `on the review page, or <code>trajgate tools approve ${inert(tools.server, 80)} --digest ${inert(tools.digest, 64)}</code>`,
      ],
    );
  rows.push(
    ['Why', html(pause.reason)],
    ['Held requests', heldList(claims, held)],
    ['Link valid until', new Date(claims.expiresAt).toISOString()],
  );
  const list = rows.map(([k, v]) => `<dt>${html(k)}</dt><dd>${v}</dd>`).join('');
  return shell(
    `trajgate: ${title}`,
    `<h1>${html(title)}?</h1><dl>${list}</dl><p class="note">${html(note)}</p>` +
      `<form method="post"><button type="submit">${html(title)}</button></form>`,
  );
}

/** Every request the session holds, each with its rid and body size; approve once marks its own. */
function heldList(claims: Does, held: readonly Shown[]): string {
  if (held.length === 0) return 'none';
  const item = (h: Shown) => {
    const mark = claims.action !== 'once' ? '' : h.covered ? '✔ approved once: ' : 'stays held: ';
    return `<li${h.covered ? ' class="covered"' : ''}>${html(`${mark}#${h.rid} ${describeHeld(h)}`)}</li>`;
  };
  return `<ul>${held.map(item).join('')}</ul>`;
}

function donePage(d: Decided): string {
  const listed = (hs: readonly HeldBrief[] = []) =>
    hs.length === 0 ? 'none' : hs.map((h) => `#${h.rid} ${describeHeld(h)}`).join(', ');
  const done =
    d.instead === 'resume'
      ? `The request this approve-once link was made for was no longer held (timed out: the agent was refused), so nothing was approved once; the session was resumed instead, counts kept: ${d.released} held request(s) judged again.`
      : d.decided === 'once'
        ? `Approved once, forwarded: ${listed(d.once)}; still held, the session paused: ${listed(d.held)}.`
        : d.decided === 'approve'
          ? `Approved ${d.approval?.pattern ?? ''} for this session: ${d.released} held request(s) judged again.`
          : d.decided === 'topup'
            ? `Topped up ${d.topUp?.budget ?? ''} by ${d.topUp?.amount ?? 0}: ${d.released} held request(s) judged again.`
            : d.decided === 'reset'
              ? `Approved once, forwarded: ${listed(d.once)}; resumed with the counts reset: ${d.released} other held request(s) judged again.`
              : `Denied: ${d.released} held request(s) answered 403; the session stays paused.`;
  return shell(
    'trajgate: decided',
    `<h1>Done</h1><p>Session ${html(JSON.stringify(d.session))}. ${html(done)}</p>`,
  );
}

function errorPage(err: TrajgateError): string {
  const head =
    err.code === 'E_LINK_USED'
      ? 'Nothing to do'
      : err.code === 'E_LINK_EXPIRED'
        ? 'Link expired'
        : err.status === 403
          ? 'Link not valid'
          : 'Not done';
  return shell(`trajgate: ${head}`, `<h1>${html(head)}</h1><p>${html(err.message)}</p>`);
}

function shell(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${html(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>\n`;
}

function sendPage(res: ServerResponse, status: number, page: string): void {
  res.writeHead(status, { ...HEADERS, 'content-length': Buffer.byteLength(page) });
  res.end(page); // (no body for HEAD: Node leaves it out)
}
