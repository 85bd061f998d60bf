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
    // The path judged is the path forwarded (url.pathname); one another server could read
    // differently is refused here, before any pattern sees it.
    const path = url.pathname === '' ? '/' : url.pathname;
    const problem = pathProblem(path);
    if (problem !== null) throw new TrajgateError('E_EVENT_INVALID', problem);
    return {
      type: 'network',
      scheme,
      host: SPECIAL.has(scheme) ? trimHost(url.hostname, target) : canonicalHost(url.hostname),
      port,
      path,
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

/** Decodings tried: enough for double and triple encoding; a deeper one is refused. */
const ROUNDS = 3;
const ESCAPE = /%[0-9a-fA-F]{2}/g;
const ANY_ESCAPE = /%[0-9a-fA-F]{2}/;
/** C0 controls and DEL, in the latin1 "binary" string of decoded bytes. */
const CONTROL = /[\x00-\x1f\x7f]/;
/** C0/C1 lead bytes, and E0/F0 followed by a too-small continuation: overlong UTF-8. */
const OVERLONG = /[\xc0\xc1]|\xe0[\x80-\x9f]|\xf0[\x80-\x8f]/;
/** Separators some server honours: `/`, and `\` (IIS, Windows paths, some routers). */
const SEPARATOR = /[/\\]/;
/** Where a server may cut a segment: `;` parameters, and `?`/`#` once decoded. */
const CUT = /[;?#]/;
/** A segment of dots (Windows also drops trailing dots and spaces: `.. ` is `..`). */
const DOTS = /^[.\s]*\.[.\s]*$/;

/**
 * Why a URL path (percent-encoded, as the WHATWG parser leaves it) could be read by a server
 * as another path than the one trajgate judges and forwards, or null.
 *
 * Literal `..`, `%2e%2e` and `\` are resolved by the URL parser before matching, and the
 * resolved path is what is forwarded. What it leaves alone an upstream may still resolve:
 * `..%2f`, `..%5c` (nginx and routers that decode before removing dot segments), `..;/`
 * (Tomcat and Spring drop `;` parameters first), `%252e%252e` (a second decoding), overlong
 * UTF-8 (`%c0%ae`), NFKC look-alikes (`．．`), NUL and CR/LF (truncation, request splitting at
 * the next hop). RFC 3986 § 3.3 leaves `;` and encoded delimiters to each server, so such a
 * path is refused rather than guessed at. An encoded `/` alone (`@scope%2fname`) adds no dot
 * segment, so no reading of it climbs out of a prefix: allowed.
 */
export function pathProblem(path: string): string | null {
  // The common path (no escape, dot, backslash, semicolon, control or non-ASCII character)
  // has no other reading: answered without decoding.
  if (!MAYBE_AMBIGUOUS.test(path)) return null;
  const shown = JSON.stringify(path.length > 200 ? `${path.slice(0, 200)}…` : path);
  let bytes = path;
  for (let round = 0; ; round++) {
    if (CONTROL.test(bytes)) {
      return `path ${shown} decodes to a control character (NUL, CR, LF …), which servers truncate or split on: remove it`;
    }
    if (OVERLONG.test(bytes)) {
      return `path ${shown} contains overlong UTF-8, which some servers decode to "." or "/": encode it as valid UTF-8`;
    }
    if (hidesDotSegment(bytes)) {
      return `path ${shown} hides a dot segment (such as "..%2f", "..;" or "%252e%252e") that the server may resolve outside the path trajgate judged (RFC 3986 § 3.3): send the path with plain "/" and no ".." segments`;
    }
    if (!ANY_ESCAPE.test(bytes)) return null;
    if (round === ROUNDS) {
      return `path ${shown} is still percent-encoded after ${ROUNDS} decodings: send it encoded once`;
    }
    bytes = bytes.replace(ESCAPE, (e) => String.fromCharCode(parseInt(e.slice(1), 16)));
  }
}

const MAYBE_AMBIGUOUS = /[^\x21-\x24\x26-\x2d\x2f-\x3a\x3c-\x5b\x5d-\x7e]/;

/** Whether a segment of this reading (decoded bytes, as latin1) is made of dots. */
function hidesDotSegment(bytes: string): boolean {
  // Read as UTF-8 and NFKC-folded, as some servers do: `．` and `／` become `.` and `/`.
  const text = Buffer.from(bytes, 'latin1').toString('utf8').normalize('NFKC');
  return text.split(SEPARATOR).some((segment) => DOTS.test(segment.split(CUT, 1)[0] as string));
}
