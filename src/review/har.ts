import type { CapturedExchange, CapturedPart } from '../action/capture.js';
import { journalFiles } from '../journal/files.js';
import { readJournal } from '../journal/reader.js';
import type { EventRecord, OutcomeRecord } from '../journal/records.js';
import { readCapture } from './captures.js';

/** HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/), the parts trajgate fills. */
export interface Har {
  readonly log: {
    readonly version: '1.2';
    readonly creator: { readonly name: string; readonly version: string };
    readonly entries: readonly object[];
  };
}

/**
 * A session's HTTP exchanges as HAR: every judged request with a method and URL (plain HTTP and
 * intercepted HTTPS; blind tunnels have neither), its outcome, and its captured headers and
 * bodies when `capture.bodies` was on (a refused request's body included: `postData` is what
 * the agent tried to send). The verdict goes into each entry's `comment` and, in full,
 * `_trajgate`. Null when the journal has no record of the session at all.
 */
export function exportHar(
  journal: string,
  captures: string,
  session: string,
  since: number,
  version: string,
): Har | null {
  let known = false;
  const requests = new Map<number, { event: EventRecord; outcome?: OutcomeRecord }>();
  // Across rotation: the rotated files oldest first, then the live one.
  for (const file of journalFiles(journal))
    readJournal(
      file,
      (r) => {
        if (!('session' in r) || r.session !== session) return;
        known = true;
        if (
          r.type === 'event' &&
          r.method !== undefined &&
          /^https?:/.test(r.target) &&
          Date.parse(r.ts) >= since
        ) {
          const rid = r.rid ?? r.seq;
          requests.set(rid, { ...requests.get(rid), event: r });
        } else if (r.type === 'outcome') {
          const request = requests.get(r.rid);
          if (request) request.outcome = r;
        }
      },
      () => undefined,
      { repair: false },
    );
  if (!known) return null;
  const entries = [...requests.entries()].map(([rid, { event, outcome }]) =>
    entry(rid, event, outcome, capture(captures, rid)),
  );
  return { log: { version: '1.2', creator: { name: 'trajgate', version }, entries } };
}

function capture(dir: string, rid: number): CapturedExchange | null {
  try {
    return readCapture(dir, rid);
  } catch {
    return null;
  }
}

function entry(
  rid: number,
  e: EventRecord,
  o: OutcomeRecord | undefined,
  c: CapturedExchange | null,
): object {
  // A long target was journaled as its prefix (journal/long-target.ts): the capture, if any,
  // has the whole URL; a prefix may not even parse.
  const href = e.targetSha256 !== undefined && c ? c.request.url : e.target;
  const url = URL.parse(href);
  const time = o?.durationMs ?? 0;
  const req = c?.request;
  const res = c?.response ?? null;
  const verdict = e.verdict === 'ALLOW' ? 'ALLOW' : `${e.verdict}: ${e.boundary ?? e.denied ?? ''}`;
  return {
    startedDateTime: e.ts,
    time,
    request: {
      method: e.method,
      url: href,
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: headers(req),
      queryString: [...(url?.searchParams ?? [])].map(([name, value]) => ({ name, value })),
      headersSize: -1,
      bodySize: req?.size ?? o?.bytesUp ?? 0,
      ...(req && req.size > 0 ? { postData: { mimeType: mime(req), ...body(req) } } : {}),
    },
    response: {
      status: o?.status ?? 0,
      statusText: o?.error ?? '',
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: headers(res),
      content: {
        size: res?.size ?? o?.bytesDown ?? 0,
        mimeType: res ? mime(res) : 'x-unknown',
        ...(res ? body(res) : {}),
      },
      redirectURL: '',
      headersSize: -1,
      bodySize: o?.bytesDown ?? -1,
    },
    cache: {},
    timings: { send: 0, wait: time, receive: 0 },
    comment: `trajgate ${verdict} (${e.reason})`,
    _trajgate: {
      rid,
      seq: e.seq,
      verdict: e.verdict,
      boundary: e.boundary,
      count: e.count,
      reason: e.reason,
      approved: e.approved,
      ...(e.denied ? { denied: e.denied } : {}),
      ...(e.targetSha256 !== undefined
        ? { targetBytes: e.targetBytes, targetSha256: e.targetSha256 }
        : {}),
      ...(o?.error ? { error: o.error } : {}),
      ...(c && !c.forwarded ? { forwarded: false } : {}),
      ...(req?.truncated || res?.truncated
        ? { truncated: { request: req?.truncated ?? false, response: res?.truncated ?? false } }
        : {}),
    },
  };
}

function headers(part: CapturedPart | undefined | null): { name: string; value: string }[] {
  return (part?.headers ?? []).map(([name, value]) => ({ name, value }));
}

function mime(part: CapturedPart): string {
  return (
    part.headers.find(([n]) => n.toLowerCase() === 'content-type')?.[1] ??
    'application/octet-stream'
  );
}

/** Text as captured (decoded when it was compressed), else base64 (HAR § content.encoding). */
function body(part: CapturedPart): { text: string; encoding?: 'base64' } {
  return part.encoding === 'text' ? { text: part.body } : { text: part.body, encoding: 'base64' };
}
