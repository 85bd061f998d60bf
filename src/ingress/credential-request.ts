import type { AgentAnswer, AgentHead, AgentRequest } from '../http/agent-message.js';
import { parseNetworkTarget } from '../event/network-target.js';
import type { ProxyContext } from './context.js';
import { isBodyRefusal } from '../http/body.js';
import type { ArmedCredential } from '../config/credential-values.js';
import type { CredentialSet, Sorted } from '../event/credential-set.js';
import type { EventInput, Exfiltration, NetworkSubject } from '../event/event.js';
import { readBody } from '../http/body.js';
import { decodeBody, parseCodings } from '../action/content-codings.js';
import {
  expectsContinue,
  hasBody,
  headerValues,
  upstreamRequestHeaders,
} from '../action/headers.js';
import type { Capture } from '../action/capture.js';
import type { PreparedRequest } from '../action/forward.js';
import { CredentialScrubber } from '../action/credential-scrub.js';
import { swapCredentials } from '../action/credential-swap.js';
import type { Signing } from './credential-sign.js';
import { hashDeclared, keyIdScrub, resign, signs } from './credential-sign.js';

/** Fields that never leave trajgate: a sentinel in them goes nowhere (RFC 9110 § 11.7.2). */
const KEPT_HERE: ReadonlySet<string> = new Set(['proxy-authorization']);

/**
 * What a request's credentials come to before it is judged: the credentials given to its
 * session for its host (`own`: swapped in once forwarded), its body when it had to be read for
 * that (bounded), the credentials it carries, the first sentinel out of place, or why it must
 * be refused (plain HTTP, revoked, a body too large to swap).
 */
export interface CredentialPlan {
  readonly own: readonly ArmedCredential[];
  /** The request as it is to be forwarded, its credentials swapped in (null: nothing to swap). */
  readonly swapped: Swapped | null;
  readonly uses: readonly string[];
  readonly out: Exfiltration | undefined;
  readonly refused: string | undefined;
}

/** A request's path, fields (as the agent sent them) and body with the credentials swapped in. */
export interface Swapped {
  readonly path: string;
  readonly rawHeaders: readonly string[];
  /** The body to send instead (PreparedRequest.body): absent, the agent's streams. */
  readonly body?: Buffer | null;
  /** The body as the agent sent it (read before judging): what a capture keeps. */
  readonly sent: Buffer | null;
  /** Turns the upstream's echo of a value back into its sentinel. */
  readonly scrub?: CredentialScrubber;
}

/**
 * Looks for every sentinel in the request's URL and header values, and in its body when one of
 * its credentials may be swapped into it (the body is then read whole, up to `maxBody`, before
 * judging: a swap changes its length). A body to any other host is watched as it streams.
 */
export async function planCredentials(
  set: CredentialSet<ArmedCredential>,
  req: AgentRequest,
  target: string,
  url: URL,
  subject: NetworkSubject,
  session: string,
  maxBody: number,
  invite: () => void,
): Promise<CredentialPlan> {
  const scanner = set.scanner!;
  const { own, swaps, swapIn, signWith, scrub } = groupOf(set, set.forHost(subject, session));
  let sorted = headSorted(set, req.rawHeaders, target, swaps);
  const raw = req.rawHeaders;
  let body: Buffer | null = null;
  let refused: string | undefined;
  const needed = swaps.length > 0 || (own.length > 0 && !hashDeclared(raw));
  if (needed && sorted.out === undefined && hasBody(req)) {
    // The body is needed to judge: it is invited now (RFC 9110 § 10.1.1).
    if (expectsContinue(req)) invite();
    try {
      body = await readBody(req, maxBody);
      // Looked into as the upstream reads it: a sentinel of another credential in a gzip body.
      const readable = asRead(body, headerValues(raw, 'content-encoding').join(','), maxBody);
      if (typeof readable === 'string') refused = readable;
      else sorted = merge(sorted, set.sort(scanner.scan(readable), swaps, 'body'));
    } catch (err) {
      refused =
        isBodyRefusal(err) && err.code === 'E_TOO_LARGE'
          ? `its body is larger than limits.scanBodyBytes (${maxBody} bytes): credential ${own[0]!.name} cannot be swapped into it`
          : `its body could not be read: ${(err as Error).message}`;
    }
  }
  refused ??= ownRefusal(set, own, sorted, subject, session);
  const plan = { own, swapped: null, uses: sorted.uses, out: sorted.out, refused };
  if (sorted.out !== undefined || refused !== undefined) return plan;
  const path = url.pathname + url.search;
  const swap = swapCredentials({ path, rawHeaders: raw, body }, swapIn, maxBody);
  if (!swap.ok) return { ...plan, refused: swap.reason };
  const signed = resign({ ...swap, method: req.method ?? 'GET' }, signWith, Date.now());
  if (!signed.ok) return { ...plan, refused: signed.reason };
  const uses = [...new Set([...swap.used, ...signed.used])];
  // Nothing swapped and no body read: the request goes as the agent sent it.
  if (uses.length === 0 && body === null) return { ...plan, uses };
  // A body not read (a signed request declaring its hash) goes up as it streams.
  const whole = body === null && hasBody(req) ? {} : { body: swap.body };
  const swapped = { path: signed.path, rawHeaders: signed.rawHeaders, ...whole, sent: body, scrub };
  return { ...plan, swapped, uses };
}

/**
 * The credentials a host gets, grouped as a request uses them: those swapped in (a signing
 * credential's sentinel is its secret, which goes nowhere, its own hosts included), those not
 * revoked, and the scrub of their values. Kept per set of credentials in force and per group,
 * so what they compile to (matchers, scanners) is built once, not per request.
 */
interface Group {
  readonly own: readonly ArmedCredential[];
  readonly swaps: readonly ArmedCredential[];
  readonly swapIn: readonly ArmedCredential[];
  readonly signWith: readonly Signing[];
  readonly scrub: CredentialScrubber;
}

const groups = new WeakMap<CredentialSet<ArmedCredential>, Map<string, Group>>();

function groupOf(set: CredentialSet<ArmedCredential>, own: readonly ArmedCredential[]): Group {
  let bySet = groups.get(set);
  if (bySet === undefined) groups.set(set, (bySet = new Map()));
  const key = own.map((c) => c.name).join('\0');
  let group = bySet.get(key);
  if (group === undefined) {
    const active = own.filter((c) => !set.revoked.has(c.name));
    const signWith = active.filter(signs);
    const swapIn = active.filter((c) => !signs(c));
    const scrub = new CredentialScrubber([...swapIn, ...signWith.map(keyIdScrub)]);
    group = { own, swaps: own.filter((c) => !signs(c)), swapIn, signWith, scrub };
    bySet.set(key, group);
  }
  return group;
}

/** The sentinels in a request's URL and header values, sorted against those it may carry. */
function headSorted(
  set: CredentialSet<ArmedCredential>,
  raw: readonly string[],
  target: string,
  swaps: readonly ArmedCredential[],
): Sorted {
  const scanner = set.scanner!;
  let sorted = set.sort(scanner.scan(target), swaps, 'url');
  // One scan of the whole header section first; each field is scanned only when it found one.
  const anyInFields = scanner.scan(raw.join('\n')).length > 0;
  for (let i = 0; anyInFields && i < raw.length && sorted.out === undefined; i += 2) {
    if (KEPT_HERE.has(raw[i]!.toLowerCase())) continue;
    sorted = merge(sorted, set.sort(scanner.scan(raw[i + 1]!), swaps, `header ${raw[i]}`));
  }
  return sorted;
}

/**
 * An Upgrade request's credentials (WebSocket): a sentinel in its URL or fields out of place,
 * or a refusal when it goes to a credential's host (nothing is swapped into an Upgrade).
 */
export function upgradeCredentials(
  ctx: Pick<ProxyContext, 'credentials'>,
  req: AgentHead,
  url: URL,
  target: string,
  session: string,
): Pick<EventInput, 'exfiltration' | 'refused'> {
  const set = ctx.credentials;
  if (set.scanner === null) return {};
  const own = set.forHost(parseNetworkTarget(url.href, req.method, url), session);
  const sorted = headSorted(set, req.rawHeaders, target, groupOf(set, own).swaps);
  if (sorted.out !== undefined) return { exfiltration: sorted.out };
  if (own.length === 0) return {};
  return {
    refused: `credential ${own[0]!.name} is not swapped into an Upgrade (WebSocket) request: send it on a plain request to ${url.host}`,
  };
}

/** The body decoded from its content codings within `max`, or why it cannot be looked into. */
function asRead(body: Buffer, codings: string, max: number): Buffer | string {
  const parsed = parseCodings(codings);
  if ('unsupported' in parsed)
    return `its body's Content-Encoding ${JSON.stringify(parsed.unsupported)} cannot be decoded to look for credential sentinels`;
  if (parsed.codings.length === 0 || body.length === 0) return body;
  const decoded = decodeBody(body, parsed.codings, max);
  return decoded.ok ? decoded.body : `its body (Content-Encoding ${codings}) ${decoded.reason}`;
}

function merge(a: Sorted, b: Sorted): Sorted {
  const uses = [...a.uses, ...b.uses.filter((n) => !a.uses.includes(n))];
  return { uses, out: a.out ?? b.out };
}

/** Why a request to a credential's own host cannot carry it, or undefined. */
function ownRefusal(
  set: CredentialSet<ArmedCredential>,
  own: readonly ArmedCredential[],
  sorted: Sorted,
  subject: NetworkSubject,
  session: string,
): string | undefined {
  for (const name of sorted.uses) {
    const why = set.lapsed([name], session);
    if (why !== null) return `${why}: its sentinel is not swapped`;
  }
  const plain = own.find((c) => subject.scheme === 'http' && !c.allowPlaintext);
  if (plain !== undefined)
    return `credential ${plain.name} goes to ${subject.host} only over TLS trajgate verifies (plain HTTP: set allowPlaintext to allow)`;
  return undefined;
}

/** What a plan adds to the request's event: the credentials it carries, or what refuses it. */
export function credentialInput(
  plan: CredentialPlan | null,
): Pick<EventInput, 'exfiltration' | 'credentials' | 'refused'> {
  if (plan === null) return {};
  if (plan.out !== undefined) return { exfiltration: plan.out };
  if (plan.refused !== undefined) return { refused: plan.refused };
  return plan.uses.length === 0 ? {} : { credentials: plan.uses };
}

/** The request's plan, or null when no credential is configured (nothing is scanned then). */
export function credentialPlan(
  ctx: Pick<ProxyContext, 'credentials' | 'limits'>,
  req: AgentRequest,
  res: AgentAnswer,
  url: URL,
  target: string,
  session: string,
): Promise<CredentialPlan> | null {
  const set = ctx.credentials;
  if (set.scanner === null) return null;
  const subject = parseNetworkTarget(url.href, req.method, url);
  return planCredentials(set, req, target, url, subject, session, ctx.limits.scanBodyBytes, () =>
    res.writeContinue(),
  );
}

/**
 * The request to forward in place of the agent's when its credentials were swapped in (or its
 * body read to look for them); its capture keeps what the agent sent, never a value.
 */
export function preparedRequest(
  plan: CredentialPlan | null,
  url: URL,
  capture: Capture | undefined,
): PreparedRequest | undefined {
  const s = plan?.swapped;
  if (s === null || s === undefined) return undefined;
  if (s.sent !== null) capture?.request(s.sent);
  const rawHeaders = upstreamRequestHeaders(s.rawHeaders, url.host);
  const body = s.body === undefined ? {} : { body: s.body };
  return { path: s.path, rawHeaders, ...body, ...(s.scrub ? { scrub: s.scrub } : {}) };
}
