import { TrajgateError } from '../errors.js';
import type { NetworkSubject } from './event.js';
import { canonicalHost, DEFAULT_PORTS, pathProblem } from './network-target.js';
import type { PathReading } from './path-readings.js';
import { everyReadingUnder, prefixReadings, readingUnder } from './path-readings.js';

/**
 * What a tunnel may be required to carry: a pattern with one of these schemes allows a tunnel
 * only when its first client bytes are that protocol (ingress/tunnel-protocol.ts).
 */
export type TunnelProtocol = 'ssh' | 'postgres' | 'tls';

/** Their default ports (RFC 4253 § 4.1 for SSH, PostgreSQL's 5432); `tls://` names one. */
const PROTOCOL_PORTS: Readonly<Record<TunnelProtocol, number | undefined>> = {
  ssh: 22,
  postgres: 5432,
  tls: undefined,
};

/** The protocol a pattern's scheme requires of a tunnel, or null (any, or an HTTP scheme). */
export function tunnelProtocolOf(p: Pick<NetworkPattern, 'scheme'>): TunnelProtocol | null {
  return p.scheme !== null && Object.hasOwn(PROTOCOL_PORTS, p.scheme)
    ? (p.scheme as TunnelProtocol)
    : null;
}

/**
 * The allowlist and approval grammar: `[METHOD ][scheme://]host[:port][/path-prefix]`.
 * `*.host` matches any subdomain but not the bare domain; hosts compare in canonical form
 * (lower case, punycode, no trailing dot; an IP only matches itself). Without a port: the
 * scheme's default, or 80 and 443 without a scheme. A method or path can only match where the
 * request is visible, so such a pattern never approves a CONNECT tunnel.
 */
export interface NetworkPattern {
  readonly source: string;
  readonly method: string | null;
  readonly scheme: string | null;
  /** Canonical host; for a wildcard, the domain after `*.`. */
  readonly host: string;
  readonly wildcard: boolean;
  readonly ports: readonly number[];
  /** The pattern names its port, which lets CONNECT reach a port outside `network.ports`. */
  readonly portNamed: boolean;
  readonly pathPrefix: string | null;
  /** The prefix in every reading (event/path-readings.ts); null without a prefix. */
  readonly prefixReadings: readonly string[] | null;
}

const SHAPE =
  /^(?:([A-Za-z]+) +)?(?:([a-zA-Z][a-zA-Z0-9+.-]*):\/\/)?(\*\.)?(\[[^\]]*\]|[^:/[\]\s]+)(?::(\d{1,5}))?(\/\S*)?$/;

/** RFC 9110 § 9.3 methods plus PATCH (RFC 5789); a typo here must not become a host. */
const METHODS = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
]);

export function parseNetworkPattern(source: string): NetworkPattern {
  const fail = (why: string): never => {
    throw new TrajgateError('E_PATTERN_INVALID', `pattern ${JSON.stringify(source)}: ${why}`);
  };
  const m = SHAPE.exec(source.trim());
  if (!m) return fail('expected [METHOD ][scheme://]host[:port][/path-prefix]');
  const [, method, schemeRaw, star, hostRaw = '', portRaw, pathRaw] = m;
  if (method !== undefined && !METHODS.has(method.toUpperCase())) {
    return fail(`unknown method "${method}" (expected one of ${[...METHODS].join(', ')})`);
  }
  const scheme = schemeRaw?.toLowerCase() ?? null;
  const protocol = tunnelProtocolOf({ scheme });
  if (hostRaw.includes('*')) return fail('"*" is only allowed as a leading "*." in the host');
  let host: string;
  try {
    host = canonicalHost(hostRaw);
  } catch {
    return fail(`invalid host ${JSON.stringify(hostRaw)}`);
  }
  if (star && isIpLiteral(host)) return fail('"*." cannot prefix an IP address');
  let ports: number[];
  if (portRaw !== undefined) {
    const port = Number(portRaw);
    if (port < 1 || port > 65535) return fail(`port ${portRaw} is out of range 1-65535`);
    ports = [port];
  } else if (scheme === null) {
    ports = [80, 443];
  } else {
    // Own keys only: `constructor://` is no scheme with a port.
    const port =
      protocol !== null
        ? PROTOCOL_PORTS[protocol]
        : Object.hasOwn(DEFAULT_PORTS, scheme)
          ? DEFAULT_PORTS[scheme]
          : undefined;
    if (port === undefined) return fail(`scheme "${scheme}" has no default port: name one`);
    ports = [port];
  }
  if (protocol !== null && (method !== undefined || pathRaw !== undefined))
    return fail(`a ${protocol}:// pattern names a tunnel: it has no method or path to match`);
  const prefix = pathRaw === undefined ? null : prefixOf(pathRaw, fail);
  const pathPrefix = prefix === '/' ? null : prefix;
  return {
    source,
    method: method?.toUpperCase() ?? null,
    scheme,
    host,
    wildcard: star !== undefined,
    ports,
    portNamed: portRaw !== undefined,
    pathPrefix,
    prefixReadings: pathPrefix === null ? null : prefixReadings(pathPrefix),
  };
}

/**
 * A pattern's path in the form targets are matched in. A query or fragment, or a dot segment
 * (which the URL parser would resolve, `/v1/..` widening to every path), is refused rather
 * than silently dropped: a prefix never covers a query.
 */
function prefixOf(raw: string, fail: (why: string) => never): string {
  if (/[?#]/.test(raw)) return fail('a path prefix cannot contain a query or fragment');
  if (raw.split(/[/\\]/).some((s) => /^(?:\.|%2e){1,2}$/i.test(s))) {
    return fail('a path prefix cannot contain "." or ".." segments');
  }
  // After an authority: resolved against a base, `//admin/` would be a host and the path `/`.
  const path = new URL(`http://x${raw}`).pathname;
  const problem = pathProblem(path);
  return problem === null ? path : fail(problem);
}

/** A path prefix ends on a segment: `/v1` covers `/v1` and `/v1/…`, never `/v10`. */
export function underPrefix(path: string, prefix: string): boolean {
  if (!path.startsWith(prefix)) return false;
  return path.length === prefix.length || prefix.endsWith('/') || path[prefix.length] === '/';
}

/**
 * An allow's match (`anyPort`: a deny pattern without a port covers every port, see
 * guard/denies.ts): the path as sent is under the prefix, and so is every other reading of it
 * (an odd spelling is never allowed where the plain one is not).
 */
export function matchesNetwork(p: NetworkPattern, s: NetworkSubject, anyPort = false): boolean {
  if (!matchesAuthorityAndMethod(p, s, anyPort)) return false;
  if (p.pathPrefix === null) return true;
  return (
    s.path !== null &&
    underPrefix(s.path, p.pathPrefix) &&
    everyReadingUnder(s.path, p.prefixReadings as readonly string[])
  );
}

/** A match without a path to read: the pattern names none. */
const WHOLE: PathReading = Object.freeze({ path: '', how: '' });

/**
 * A deny's or a rule's match: the reading of the request's path that the pattern covers (the
 * first, least transformed one; `how` is empty when the path as sent is under the prefix), or
 * null. Any reading suffices: what one server reads as the denied path is refused.
 */
export function reachesNetwork(
  p: NetworkPattern,
  s: NetworkSubject,
  anyPort = false,
): PathReading | null {
  if (!matchesAuthorityAndMethod(p, s, anyPort)) return null;
  if (p.pathPrefix === null) return WHOLE;
  if (s.path === null) return null;
  if (underPrefix(s.path, p.pathPrefix)) return { path: s.path, how: '' };
  return readingUnder(s.path, p.prefixReadings as readonly string[]);
}

function matchesAuthorityAndMethod(p: NetworkPattern, s: NetworkSubject, anyPort: boolean) {
  return matchesAuthority(p, s, anyPort) && (p.method === null || p.method === s.method);
}

/** Host, port and (where both name one) scheme: what a CONNECT tunnel shows. */
export function matchesAuthority(p: NetworkPattern, s: NetworkSubject, anyPort = false): boolean {
  if (!(anyPort && !p.portNamed) && !p.ports.includes(s.port)) return false;
  if (!matchesHost(p, s.host)) return false;
  return p.scheme === null || s.scheme === null || p.scheme === s.scheme;
}

/** The host part alone: exact, or a strict subdomain for `*.`. */
export function matchesHost(p: NetworkPattern, host: string): boolean {
  if (!p.wildcard) return host === p.host;
  return host.length > p.host.length + 1 && host.endsWith(`.${p.host}`);
}

function isIpLiteral(host: string): boolean {
  return host.includes(':') || /^\d+\.\d+\.\d+\.\d+$/.test(host);
}
