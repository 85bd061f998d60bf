import type { Config } from '../config/load.js';
import { pathProblem } from '../event/network-target.js';
import { globToRegExp } from '../guard/glob.js';

/** A `bridge.routes` entry, its path glob compiled. */
export interface Route {
  readonly method: string;
  readonly glob: string;
  readonly path: RegExp;
  readonly kind: string;
  readonly target: string;
  /** Where a `command` route's command line is (`$.field`, `query:name`). */
  readonly command?: string | undefined;
}

/** Routes match case-insensitively (ASCII; see matchRoute for the rest) and without a trailing `/`. */
export function compileRoutes(routes: Config['bridge']['routes']): Route[] {
  return routes.map((r) => {
    const glob = r.path.length > 1 && r.path.endsWith('/') ? r.path.slice(0, -1) : r.path;
    const path = new RegExp(globToRegExp(glob).source, 'is');
    const { kind, target, command } = r;
    return { method: r.method.toUpperCase(), glob: r.path, path, kind, target, command };
  });
}

export type RouteMatch =
  | {
      readonly ok: true;
      readonly route: Route | null;
      /** Decoded path segments, dot segments removed, no trailing empty one. */
      readonly segments: readonly string[];
      /** The normalised path: what was matched, what is judged and what is forwarded. */
      readonly path: string;
      /** `path` plus the query as sent. */
      readonly url: string;
      readonly query: string;
    }
  | { readonly ok: false; readonly reason: string };

/**
 * Matches a request target the way tool servers route it: percent-decoded, dot segments
 * removed, case-insensitive, a trailing `/` ignored. The normalised path is what is forwarded,
 * so its dot segments, case and needless escapes cannot be read another way. What it has to
 * keep is read every other way some server does (encoded `/` or `\` as separators, `;`
 * parameters dropped, a second decoding, `//` merged, Unicode case or NFKC folding); if any
 * reading reaches another route, another segment target or no route, the request is refused:
 * trajgate cannot know which reading the server makes.
 */
export function matchRoute(raw: string, method: string, routes: readonly Route[]): RouteMatch {
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  const shown = JSON.stringify(path.length > 200 ? `${path.slice(0, 200)}…` : path);
  const fail = (why: string) => ({ ok: false as const, reason: `path ${shown} ${why}` });
  if (!path.startsWith('/') || path.startsWith('//'))
    return fail('does not start with a single "/" (a leading "//" reads as a host name)');
  if (raw.includes('#')) return fail('contains "#", where servers cut the request target');
  const normal = path.split('/').slice(1).map(normalise);
  if (normal.includes(null)) return fail('has a "%" that is not followed by two hex digits');
  const raws = removeDots(normal as string[]);
  const forwarded = `/${raws.join('/')}`;
  const problem = pathProblem(forwarded);
  if (problem !== null) return { ok: false, reason: problem };
  let decoded: string[];
  try {
    decoded = raws.map(decodeURIComponent);
  } catch {
    return fail('percent-encodes bytes that are not UTF-8, which servers decode differently');
  }
  const judged = routeOf(decoded, method, routes);
  for (const reading of readingsOf(forwarded)) {
    const other = routeOf(segmentsOf(forwarded, reading), method, routes);
    // Folding picks a route; the server still hands the segment on as sent.
    if (other.route === judged.route && (reading.fold || other.target === judged.target)) continue;
    return fail(
      `is ${routeText(judged)} as trajgate reads it but ${routeText(other)} to a server that ${reading.text}; refused, since the tool server could read it either way`,
    );
  }
  const query = q === -1 ? '' : raw.slice(q + 1);
  return {
    ok: true,
    route: judged.route,
    segments: judged.segments,
    path: forwarded,
    url: q === -1 ? forwarded : `${forwarded}?${query}`,
    query,
  };
}

interface Judged {
  readonly route: Route | null;
  readonly segments: string[];
  /** The segment a `segment:N` route takes its target from, else null. */
  readonly target: string | null;
}

function routeOf(all: string[], method: string, routes: readonly Route[]): Judged {
  const segments = all.length > 1 && all.at(-1) === '' ? all.slice(0, -1) : all;
  // A decoded "/" stays inside its segment: encoded, it cannot match a route's separator.
  const text = `/${segments.map((s) => s.replace(/%/g, '%25').replace(/\//g, '%2F')).join('/')}`;
  const find = (m: string) => routes.findIndex((r) => r.method === m && r.path.test(text));
  // Servers answer HEAD with their GET handler (which still acts), unless HEAD has its own.
  let i = find(method);
  if (i === -1 && method === 'HEAD') i = find('GET');
  const route = routes[i] ?? null;
  const n = route?.target.startsWith('segment:') ? Number(route.target.slice(8)) : 0;
  const target = n > 0 ? (segments[n - 1] ?? '') : null;
  return { route, segments, target };
}

function routeText({ route, target }: Judged): string {
  if (route === null) return 'no route (an unmapped call)';
  const seg = target === null ? '' : ` with target ${JSON.stringify(target)}`;
  return `the ${route.kind} route ${route.method} ${route.glob}${seg}`;
}

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** RFC 3986 § 6.2.2 form of a raw segment: unreserved escapes decoded, the rest upper-case. */
function normalise(segment: string): string | null {
  if (/%(?![0-9a-fA-F]{2})/.test(segment)) return null;
  return segment.replace(
    /%([0-9a-fA-F]{2})|[^A-Za-z0-9\-._~!$&'()*+,;=:@%]/g,
    (m, hex?: string) => {
      if (hex === undefined) return encodeURIComponent(m);
      const c = String.fromCharCode(parseInt(hex, 16));
      return UNRESERVED.test(c) ? c : `%${hex.toUpperCase()}`;
    },
  );
}

/** RFC 3986 § 5.2.4 on segments; a trailing dot segment leaves a trailing `/`. */
function removeDots<T>(segments: T[]): T[] {
  const out: T[] = [];
  segments.forEach((s, i) => {
    if (s !== '.' && s !== '..') return void out.push(s);
    if (s === '..') out.pop();
    if (i === segments.length - 1) out.push('' as T);
  });
  return out;
}

type Fold = 'lower' | 'upper' | 'nfkc';
interface Reading {
  readonly sep?: boolean;
  readonly params?: boolean;
  readonly deep?: boolean;
  readonly merge?: boolean;
  readonly fold?: Fold;
  readonly text: string;
}

const FLAGS = {
  sep: [/\\|%(?:25)*(?:2f|5c)/i, 'splits segments at an encoded "/" or "\\"'],
  params: [/;|%(?:25)*3b/i, 'drops ";" parameters'],
  deep: [/%25/, 'decodes twice'],
  merge: [/\/\/|\\|%(?:25)*(?:2f|5c)/i, 'merges empty segments'],
} as const;
const FOLDS: Record<Fold, string> = {
  lower: 'lower-cases Unicode',
  upper: 'upper-cases Unicode',
  nfkc: 'folds look-alike characters (NFKC)',
};

/** The other readings worth trying: only those whose trigger the path contains. */
function readingsOf(path: string): Reading[] {
  let all: Reading[] = [{ text: '' }];
  for (const [flag, [trigger, text]] of Object.entries(FLAGS)) {
    if (!trigger.test(path)) continue;
    all = all.flatMap((r) => [r, { ...r, [flag]: true, text: `${r.text} and ${text}` }]);
  }
  if (/%(?:25)*[89a-f]/i.test(path)) {
    const folded = (Object.keys(FOLDS) as Fold[]).flatMap((fold) =>
      all.map((r) => ({ ...r, fold, text: `${r.text} and ${FOLDS[fold]}` })),
    );
    all = [...all, ...folded];
  }
  return all.slice(1).map((r) => ({ ...r, text: r.text.slice(5) }));
}

function segmentsOf(path: string, r: Reading): string[] {
  const split = (s: string) => (r.sep ? s.split(/[/\\]/) : [s]);
  const cut = (s: string) => (r.params ? (s.split(';', 1)[0] as string) : s);
  let segments = path
    .split('/')
    .slice(1)
    .flatMap(split)
    .map((s) => decode(cut(s), r.deep ? 3 : 1))
    .flatMap(split)
    .map(cut);
  if (r.fold) segments = segments.flatMap((s) => fold(s, r.fold as Fold).split('/'));
  if (r.merge) segments = segments.filter((s, i) => s !== '' || i === segments.length - 1);
  return removeDots(segments);
}

function decode(s: string, rounds: number): string {
  for (let i = 0; i < rounds && s.includes('%'); i++) {
    s = s.replace(/(?:%[0-9a-fA-F]{2})+/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
  }
  return s;
}

function fold(s: string, how: Fold): string {
  return how === 'lower'
    ? s.toLowerCase()
    : how === 'upper'
      ? s.toUpperCase()
      : s.normalize('NFKC');
}
