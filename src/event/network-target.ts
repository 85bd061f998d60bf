import { TrajgateError } from '../errors.js';
import type { NetworkSubject } from './event.js';

/** Default ports per scheme; a pattern or target without a port takes these. */
export const DEFAULT_PORTS: Readonly<Record<string, number>> = {
  http: 80,
  https: 443,
  ws: 80,
  wss: 443,
};

const HOST_CHARS = /^(?:\[[0-9a-fA-F:.]+\]|[^\s/?#@\\[\]:]+)$/;
const AUTHORITY = /^(\[[^\]]*\]|[^:]*):(\d{1,5})$/;

/**
 * Canonical host name: the WHATWG URL parser lower-cases, converts IDNs to punycode and
 * rewrites odd IPv4 spellings (`127.1`, `0x7f.0.0.1`, `2130706433`) to dotted quads and IPv6
 * to its compressed form; we also drop a trailing dot and IPv6 brackets. Throws on garbage.
 */
export function canonicalHost(raw: string): string {
  if (!HOST_CHARS.test(raw)) throw invalidHost(raw);
  let url: URL;
  try {
    url = new URL(`http://${raw}/`);
  } catch {
    throw invalidHost(raw);
  }
  let host = url.hostname;
  if (host.startsWith('[')) host = host.slice(1, -1);
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host === '' || host.endsWith('.')) throw invalidHost(raw);
  return host;
}

/** Schemes whose hosts the URL parser already canonicalises (WHATWG URL § special scheme). */
const SPECIAL = new Set(['http', 'https', 'ws', 'wss', 'ftp']);

function trimHost(hostname: string, target: string): string {
  let host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host === '' || host.endsWith('.')) throw invalidHost(target);
  return host;
}

function invalidHost(raw: string): TrajgateError {
  return new TrajgateError('E_EVENT_INVALID', `invalid host name ${JSON.stringify(raw)}`);
}

function portNumber(text: string, target: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TrajgateError(
      'E_EVENT_INVALID',
      `port out of range in network target ${JSON.stringify(target)}`,
    );
  }
  return port;
}

/**
 * A network target is either an absolute URL (plain HTTP, intercepted TLS) or a CONNECT
 * authority `host:port`, where scheme, method and path are not visible.
 */
export function parseNetworkTarget(target: string, method?: string, parsed?: URL): NetworkSubject {
  if (parsed !== undefined || target.includes('://')) {
    let url: URL;
    try {
      url = parsed ?? new URL(target);
    } catch {
      throw new TrajgateError('E_EVENT_INVALID', `invalid URL ${JSON.stringify(target)}`);
    }
    const scheme = url.protocol.slice(0, -1);
    const port = url.port === '' ? DEFAULT_PORTS[scheme] : portNumber(url.port, target);
    if (port === undefined) {
      throw new TrajgateError(
        'E_EVENT_INVALID',
        `network target ${JSON.stringify(target)} has no port and scheme "${scheme}" has no default`,
      );
    }
    return {
      type: 'network',
      scheme,
      host: SPECIAL.has(scheme) ? trimHost(url.hostname, target) : canonicalHost(url.hostname),
      port,
      path: url.pathname === '' ? '/' : url.pathname,
      method: method ? method.toUpperCase() : null,
    };
  }
  return parseAuthority(target);
}

/**
 * A CONNECT request target: authority form `host:port` only (RFC 9110 § 9.3.6), never a URL
 * or a path — a tunnel carries no method or path for a pattern to match. Throws
 * E_EVENT_INVALID for anything else.
 */
export function parseAuthority(target: string): NetworkSubject {
  const m = AUTHORITY.exec(target);
  if (!m) {
    throw new TrajgateError(
      'E_EVENT_INVALID',
      `network target ${JSON.stringify(target)} is neither an absolute URL nor host:port`,
    );
  }
  return {
    type: 'network',
    scheme: null,
    host: canonicalHost(m[1] as string),
    port: portNumber(m[2] as string, target),
    path: null,
    method: null,
  };
}
