import type { NetworkSubject } from '../event/event.js';
import type { NetworkPattern } from '../event/network-pattern.js';
import { matchesAuthority, matchesHost, underPrefix } from '../event/network-pattern.js';

/** Longest path quoted in a reason (agents' paths can be long). */
const SHOWN = 80;

/**
 * Why a request that no pattern approved missed the patterns that name its host, or null when
 * none names it: "host allowed for GET only", "path /a/ allowed, /b/x is not". An agent (and
 * the operator reading its refusal) then sees whether the allowlist is missing an entry or the
 * request went somewhere the entry deliberately leaves out.
 */
export function explainMiss(patterns: readonly NetworkPattern[], s: NetworkSubject): string | null {
  const host = patterns.filter((p) => matchesHost(p, s.host));
  if (host.length === 0) return null;
  const authority = host.filter((p) => matchesAuthority(p, s));
  if (authority.length === 0) {
    const ports = unique(host.flatMap((p) => p.ports));
    if (!ports.includes(s.port)) return `host allowed on ${plural('port', ports)} only`;
    const schemes = host.filter((p) => p.ports.includes(s.port)).map((p) => p.scheme as string);
    return `host allowed over ${unique(schemes).join(', ')} only`;
  }
  if (s.method === null || s.path === null) {
    return `host allowed only as ${quoted(authority)}, which a tunnel does not show: its requests must be read (plain HTTP, or tls.intercept for TLS)`;
  }
  const method = authority.filter((p) => p.method === null || p.method === s.method);
  const path = authority.filter(
    (p) => p.pathPrefix === null || underPrefix(s.path as string, p.pathPrefix),
  );
  if (method.length === 0) {
    return `host allowed for ${unique(authority.map((p) => p.method as string)).join(', ')} only`;
  }
  const shown = s.path.length > SHOWN ? `${s.path.slice(0, SHOWN)}…` : s.path;
  if (path.length === 0) {
    const prefixes = unique(authority.map((p) => p.pathPrefix as string));
    return `${plural('path', prefixes)} allowed, ${shown} is not`;
  }
  // Each pattern misses on one part or the other: say which patterns there are.
  return `host allowed only as ${quoted(authority)}`;
}

function unique<T>(values: T[]): T[] {
  return [...new Set(values)];
}

function plural(word: string, values: readonly (string | number)[]): string {
  return `${word}${values.length > 1 ? 's' : ''} ${values.join(', ')}`;
}

function quoted(patterns: readonly NetworkPattern[]): string {
  const shown = patterns.slice(0, 3).map((p) => JSON.stringify(p.source));
  return `${shown.join(', ')}${patterns.length > 3 ? ` and ${patterns.length - 3} more` : ''}`;
}
