import type { NetworkSubject } from '../event/event.js';
import type { NetworkPattern, TunnelProtocol } from '../event/network-pattern.js';
import { matchesNetwork, parseNetworkPattern } from '../event/network-pattern.js';
import { DEFAULT_PORTS } from '../event/network-target.js';
import type { LearnedRequest } from './learn-requests.js';

/** A proposed allow entry and the admitted requests it stands for. */
export interface ProposedEntry {
  readonly pattern: string;
  /** `request`: judged where its method and path were visible; `tunnel`: a blind tunnel. */
  readonly kind: 'request' | 'tunnel';
  readonly count: number;
  readonly first: string;
  readonly last: string;
  readonly sessions: readonly string[];
}

/** Admitted requests no entry could admit without also admitting a refused one. */
export interface Conflict {
  readonly target: string;
  readonly count: number;
  /** The refused request in the way; absent when no pattern of the grammar admits them. */
  readonly refused?: { readonly target: string; readonly seq: number; readonly why: string };
}

export interface Proposal {
  readonly entries: readonly ProposedEntry[];
  readonly conflicts: readonly Conflict[];
}

const TUNNEL_PROTOCOLS: ReadonlySet<string> = new Set<TunnelProtocol>(['ssh', 'postgres', 'tls']);

/**
 * The least-privilege allow entries for the admitted requests, none of which admits a refused
 * one. A blind tunnel's entry is its `host:port`, or `ssh://`, `postgres://`, `tls://` when
 * every one carried that protocol. Visible requests get `METHOD scheme://host[:port]/prefix`:
 * per method and origin, paths merge to their longest common segment prefix while that prefix
 * admits no refused request and keeps at least one segment (the bare host is a wider grant
 * than any set of paths shows a need for); where it would, they split on the next segment.
 * Each pattern is parsed back and matched (event/network-pattern.ts) against what it must and
 * must not admit, so the grammar, not this code's idea of it, decides.
 */
export function propose(requests: readonly LearnedRequest[]): Proposal {
  const refused = requests.filter((r) => !r.admitted);
  const groups = new Map<string, LearnedRequest[]>();
  for (const r of requests) {
    if (!r.admitted) continue;
    const s = r.subject;
    const key = s.path === null ? `${authority(s)}` : `${s.method ?? ''} ${origin(s)}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const entries: ProposedEntry[] = [];
  const conflicts: Conflict[] = [];
  const out = { entries, conflicts, refused };
  for (const group of groups.values()) {
    if ((group[0] as LearnedRequest).subject.path === null) tunnelEntry(group, out);
    else pathEntries(group.map(withSegments), 0, out);
  }
  entries.sort((a, b) => (a.pattern < b.pattern ? -1 : a.pattern > b.pattern ? 1 : 0));
  return { entries, conflicts };
}

interface Sink {
  readonly entries: ProposedEntry[];
  readonly conflicts: Conflict[];
  readonly refused: readonly LearnedRequest[];
}

function tunnelEntry(group: readonly LearnedRequest[], out: Sink): void {
  const s = (group[0] as LearnedRequest).subject;
  const protocols = new Set(group.map((r) => r.protocol));
  const [only] = protocols;
  const scheme =
    protocols.size === 1 && only != null && TUNNEL_PROTOCOLS.has(only) ? `${only}://` : '';
  settle(`${scheme}${authority(s)}`, 'tunnel', group, out, true);
}

interface Item {
  readonly request: LearnedRequest;
  readonly segments: readonly string[];
}

const withSegments = (request: LearnedRequest): Item => ({
  request,
  segments: (request.subject.path as string).slice(1).split('/'),
});

/** `items` share their first `depth` segments. */
function pathEntries(items: readonly Item[], depth: number, out: Sink): void {
  let common = depth;
  const [head] = items as [Item];
  while (
    common < head.segments.length &&
    items.every((i) => i.segments.length > common && i.segments[common] === head.segments[common])
  ) {
    common++;
  }
  const exact = items.filter((i) => i.segments.length === common);
  const last = exact.length > 0 || items.length === 1;
  // No common segment (a request to `/` itself has one, empty): split rather than grant the host.
  if (common > 0 && settle(patternOf(head, common), 'request', requestsOf(items), out, last)) {
    return;
  }
  const next = new Map<string, Item[]>();
  for (const i of items) {
    if (i.segments.length === common) continue;
    const seg = i.segments[common] as string;
    next.set(seg, [...(next.get(seg) ?? []), i]);
  }
  for (const group of next.values()) pathEntries(group, common + 1, out);
}

const requestsOf = (items: readonly Item[]) => items.map((i) => i.request);

function patternOf(item: Item, depth: number): string {
  const s = item.request.subject;
  const method = s.method === null ? '' : `${s.method} `;
  return `${method}${origin(s)}/${item.segments.slice(0, depth).join('/')}`;
}

/**
 * Proposes `source` for `group` when it parses, admits every request of it and no refused
 * one; else, when `last` (nothing narrower to try), reports what is in the way. Answers
 * whether the group is settled.
 */
function settle(
  source: string,
  kind: ProposedEntry['kind'],
  group: readonly LearnedRequest[],
  out: Sink,
  last: boolean,
): boolean {
  let pattern: NetworkPattern | null;
  try {
    pattern = parseNetworkPattern(source);
  } catch {
    pattern = null;
  }
  const admitsAll = pattern !== null && group.every((r) => matchesNetwork(pattern, r.subject));
  const blocker =
    pattern === null ? undefined : out.refused.find((r) => matchesNetwork(pattern, r.subject));
  if (admitsAll && blocker === undefined) {
    const times = group.map((r) => r.ts).sort();
    out.entries.push({
      pattern: source,
      kind,
      count: group.length,
      first: times[0] as string,
      last: times[times.length - 1] as string,
      sessions: [...new Set(group.map((r) => r.session))].sort(),
    });
    return true;
  }
  if (!last) return false;
  out.conflicts.push({
    target: source,
    count: group.length,
    ...(blocker === undefined
      ? {}
      : { refused: { target: blocker.target, seq: blocker.seq, why: blocker.refusedBy ?? '' } }),
  });
  return true;
}

/** `host:port` as a pattern names it (IPv6 in brackets). */
function authority(s: NetworkSubject): string {
  return `${s.host.includes(':') ? `[${s.host}]` : s.host}:${s.port}`;
}

/** `scheme://host[:port]`, the port only where it is not the scheme's own. */
function origin(s: NetworkSubject): string {
  const scheme = s.scheme as string;
  const host = s.host.includes(':') ? `[${s.host}]` : s.host;
  return DEFAULT_PORTS[scheme] === s.port ? `${scheme}://${host}` : `${scheme}://${host}:${s.port}`;
}
