import { TrajgateError, isTrajgateError } from '../errors.js';
import type { ToolTarget } from '../event/tool-map.js';
import { commandLine, toolTargets } from '../event/tool-map.js';
import type { Route, RouteMatch } from './route-path.js';
import { matchRoute } from './route-path.js';

/** What a route's target is read from, and where the path judged is written back. */
export interface RouteCall {
  readonly match: RouteMatch & { ok: true };
  readonly method: string;
  readonly routes: readonly Route[];
  /** The parsed JSON body, or undefined when there is none. */
  readonly body: unknown;
  /** Sets the URL forwarded to the tool server. */
  readonly forward: (url: string) => void;
}

/**
 * The route's target: `$.a.b` (JSON body), `query:name`, `segment:N` (1-based, decoded path
 * segment). A path judged is written back where it was read from (see judgedPaths), so the
 * tool server gets the absolute path trajgate judged, never a relative one it resolves itself.
 * Null when the target is missing; a problem when the request could name it twice.
 */
export function targetOf(route: Route, call: RouteCall): ToolTarget | null | { problem: string } {
  const spec = route.target;
  const { match, body } = call;
  if (spec.startsWith('$.')) {
    const clash = queryClash(match.query, spec.slice(2).split('.'));
    if (clash !== null) return { problem: clash };
    const field = [{ kind: route.kind, target: spec.slice(2) }];
    try {
      return toolTargets({ route: field }, 'route', body as Record<string, unknown>)?.[0] ?? null;
    } catch (err) {
      if (isTrajgateError(err)) return null;
      throw err;
    }
  }
  if (spec.startsWith('query:')) {
    const name = spec.slice(6);
    const value = queryValue(match.query, name);
    if (typeof value === 'object' && value !== null) return value;
    const field = bodyClash(body, name);
    if (field !== null) return { problem: field };
    if (value === null) return null;
    const set = (abs: string) => call.forward(withQuery(match, name, abs));
    return { kind: route.kind, target: value, set };
  }
  const n = Number(spec.slice(8));
  const value = match.segments[n - 1];
  if (value === undefined || value === '') return null;
  return { kind: route.kind, target: value, set: (abs) => call.forward(withSegment(call, n, abs)) };
}

/**
 * The command line a `command` route names (`$.a.b`, `query:name`), read as its target is: null
 * when the request leaves it out, a problem when servers could read it another way or it is
 * no command line (the person reviewing must see what runs).
 */
export function commandOf(route: Route, call: RouteCall): string | null | { problem: string } {
  const spec = route.command;
  if (spec === undefined) return null;
  if (spec.startsWith('query:')) {
    const name = spec.slice(6);
    const value = queryValue(call.match.query, name);
    const clash = bodyClash(call.body, name);
    return clash !== null ? { problem: clash } : value;
  }
  const names = spec.slice(2).split('.');
  const clash = queryClash(call.match.query, names);
  if (clash !== null) return { problem: clash };
  try {
    return commandLine(call.body, names.join('.'), 'route');
  } catch (err) {
    if (isTrajgateError(err)) return { problem: err.message };
    throw err;
  }
}

/**
 * A query parameter's single value (null when absent or empty), or why servers could read it
 * otherwise: a repeated name (first or last wins), `;` (a separator to older Python and Go),
 * a key that reads as the name (see readsAs).
 */
export function queryValue(query: string, name: string): string | null | { problem: string } {
  if (query.includes(';'))
    return { problem: 'the query contains ";", a parameter separator to some servers' };
  const values: string[] = [];
  for (const [key, value] of new URLSearchParams(query)) {
    if (key === name) values.push(value);
    else if (readsAs(key, name))
      return { problem: `query parameter ${JSON.stringify(key)} may be read as "${name}"` };
  }
  if (values.length > 1)
    return { problem: `query parameter "${name}" is repeated; servers differ on which one counts` };
  return values[0] || null;
}

/**
 * Why a query parameter may stand in for the judged body field (servers that merge query and
 * body into one set of parameters: Rails, PHP's $_REQUEST, ASP.NET binding), or null. Every
 * name on the field's path counts: `?cwd=` may replace `$.options.cwd` once merged.
 */
function queryClash(query: string, names: readonly string[]): string | null {
  // `;` too: a separator to some servers, so what follows it may be a key of its own.
  for (const part of query.split(/[&;]/)) {
    for (const key of new URLSearchParams(part).keys()) {
      const name = names.find((n) => readsAs(key, n));
      if (name !== undefined)
        return `query parameter ${JSON.stringify(key)} may be read as the body field "${name}" (servers that merge query and body); give the ${name} once, in the body`;
    }
  }
  return null;
}

/** The body's top-level key that may stand in for a `query:` target once merged, or null. */
function bodyClash(body: unknown, name: string): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const key = Object.keys(body).find((k) => readsAs(k, name));
  return key === undefined
    ? null
    : `body field ${JSON.stringify(key)} may be read as the query parameter "${name}" (servers that merge query and body); give the ${name} once, in the query`;
}

/**
 * Whether a (decoded) parameter name may be read as `name` by some server: in another case
 * (ASP.NET; Unicode both ways, as .NET and Java fold), NFKC-folded, decoded once more, as
 * `name[…]` or `name.…` (PHP, qs: an array or object of that name), or as PHP spells keys
 * (leading spaces dropped, `.` and ` ` turned to `_`).
 */
export function readsAs(key: string, name: string): boolean {
  const lower = name.toLowerCase();
  const upper = name.toUpperCase();
  const spellings = [key, key.normalize('NFKC'), decodeOnce(key), phpName(key)];
  return spellings.some((k) =>
    [k.toLowerCase(), k.toUpperCase()].some((f) =>
      [lower, upper].some((n) => f === n || f.startsWith(`${n}[`) || f.startsWith(`${n}.`)),
    ),
  );
}

function decodeOnce(key: string): string {
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
}

/** PHP's name for a query key: `a.b` and `a b` are `a_b`, a `[` never closed is `_`. */
function phpName(key: string): string {
  const name = key.trimStart().replace(/[ .]/g, '_');
  return name.includes('[') && !name.includes(']') ? name.replace('[', '_') : name;
}

/** The URL with the target parameter's one pair rewritten to the path judged. */
function withQuery(match: RouteMatch & { ok: true }, name: string, abs: string): string {
  const pairs = match.query.split('&');
  const at = pairs.findIndex((p) => [...new URLSearchParams(p).keys()][0] === name);
  pairs[at] = `${name}=${encodeURIComponent(abs)}`;
  return `${match.path}?${pairs.join('&')}`;
}

/**
 * The URL with segment `n` rewritten to the encoded path judged, if the route matcher still
 * reads it as the same route and target; else refused (an encoded "/" is a separator to some
 * servers, so the matcher finds another reading of it).
 */
function withSegment({ match, method, routes }: RouteCall, n: number, abs: string): string {
  const parts = match.path.split('/');
  parts[n] = encodeURIComponent(abs);
  const again = matchRoute(parts.join('/') + match.url.slice(match.path.length), method, routes);
  if (again.ok && again.route === match.route && again.segments[n - 1] === abs) return again.url;
  throw new TrajgateError(
    'E_PATH_REFUSED',
    `segment ${n} ${JSON.stringify(match.segments[n - 1])} is the path ${abs}, and a path segment cannot carry the absolute path; give it in the query or body`,
  );
}
