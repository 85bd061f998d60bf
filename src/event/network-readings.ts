/** `scheme://rest`, the scheme as RFC 3986 § 3.1 spells it. */
const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(.*)$/s;
/** A CONNECT-style `host:port` (an IPv6 literal in brackets). */
const HOST_PORT = /^(\[[^\]]*\]|[^:]*):\d+$/;
/** Spaces, tabs, newlines, C0 controls and DEL: stripped, kept or refused, per parser. */
const CONTROL = /[\x00-\x20\x7f]/;
const IPV4_PART = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const DOTTED_QUAD = new RegExp(`^${IPV4_PART}(?:\\.${IPV4_PART}){3}$`);
/** WHATWG URL § host parsing "ends in a number": a last label of digits or `0x` hex. */
const NUMERIC_LABEL = /^(?:\d+|0x[0-9a-f]*)$/i;
/** A dot segment, plain or percent-encoded (WHATWG URL decodes `%2e`, RFC 3986 does not). */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/**
 * Why a network target that some other client will fetch (a runner's WebFetch, a tool
 * server's HTTP client) could reach another host or path than the one trajgate judges, or
 * null. trajgate reads targets as WHATWG URL does; the client may read them as RFC 3986 does
 * (curl, Python, Go, Java) or by a looser rule, and wherever the two readings can part, the
 * target is refused rather than guessed at:
 * - a space, tab, newline or control character (WHATWG strips or drops them, RFC refuses);
 * - no `scheme://` (WHATWG reads `http:host` and `http:/host` as URLs, RFC as paths), or
 *   extra slashes (`http:///host`: WHATWG skips them, RFC reads an empty host);
 * - `\` before the query (WHATWG reads it as `/`, so `http://a\@b/` is host a to it and host
 *   b to an RFC parser), a user name (`user@host`: parsers split at different `@`s), an `@`
 *   after a `?` or `#` that ends the host (`http://a#@b/` is host b to older clients);
 * - a percent-encoded host (WHATWG decodes it), a non-ASCII one (IDNA 2003, 2008 and UTS 46
 *   map some names to different punycode), characters no host name has;
 * - a numeric host that is not a dotted quad (`127.1`, `0x7f.1`, `2130706433`, `010.0.0.1`:
 *   IPv4 to WHATWG and inet_aton, a name or another address to others);
 * - a `.` or `..` path segment, plain or encoded (WHATWG removes them, some clients do not).
 */
export function networkTargetProblem(target: string): string | null {
  const shown = JSON.stringify(target.length > 200 ? `${target.slice(0, 200)}…` : target);
  const no = (why: string) => `network target ${shown} ${why}`;
  if (CONTROL.test(target))
    return no(
      'contains a space, tab, newline or control character, which URL parsers strip, keep or refuse differently: percent-encode or remove it',
    );
  const rest = ABSOLUTE.exec(target)?.[1];
  if (rest === undefined) {
    const host = HOST_PORT.exec(target)?.[1];
    if (host === undefined)
      return no('has no "scheme://": give an absolute URL (https://host/path) or host:port');
    const why = hostProblem(host);
    return why === null ? null : no(why);
  }
  if (/^[/\\]/.test(rest))
    return no(
      'has more than two slashes after the scheme, which WHATWG URL skips and RFC 3986 reads as an empty host',
    );
  const end = rest.search(/[/?#]/);
  const authority = end === -1 ? rest : rest.slice(0, end);
  if (authority.includes('\\'))
    return no(
      'has "\\" in its host part, which ends the host for WHATWG URL but not for RFC 3986 (which may read the host after an "@"): remove it',
    );
  if (authority.includes('@'))
    return no(
      'carries a user name ("user@host"), which parsers split at different "@"s: remove it',
    );
  if (end !== -1 && rest[end] !== '/' && rest.includes('@', end))
    return no(
      'has "@" after the "?" or "#" that ends its host, which some clients read as the end of a user name: put "/" after the host',
    );
  const why = authorityProblem(authority);
  if (why !== null) return no(why);
  const path = end === -1 || rest[end] !== '/' ? '' : (rest.slice(end).split(/[?#]/, 1)[0] ?? '');
  if (path.includes('\\'))
    return no(
      'has "\\" in its path, which WHATWG URL reads as "/" and RFC 3986 does not: encode it as %5C',
    );
  if (path.split('/').some((s) => DOT_SEGMENT.test(s)))
    return no(
      'has a "." or ".." path segment, which WHATWG URL removes and some clients send as is: give the path without them',
    );
  return null;
}

/** `host[:port]` of an absolute URL. */
function authorityProblem(authority: string): string | null {
  const bracket = authority.startsWith('[') ? authority.indexOf(']') + 1 : 0;
  const colon = authority.indexOf(':', bracket);
  const host = colon === -1 ? authority : authority.slice(0, colon);
  if (colon !== -1 && !/^\d*$/.test(authority.slice(colon + 1)))
    return `has a port that is not a number (${JSON.stringify(authority.slice(colon + 1))})`;
  return hostProblem(host);
}

function hostProblem(host: string): string | null {
  if (host === '') return 'has no host';
  if (host.includes('%'))
    return 'percent-encodes its host, which WHATWG URL decodes and RFC 3986 clients may send as is: give the host plainly';
  if (/[^\x21-\x7e]/.test(host))
    return 'has a host that is not ASCII, which clients map to punycode differently (IDNA 2003, 2008, UTS 46): give it as xn--…';
  if (host.startsWith('['))
    return /^\[[0-9A-Fa-f:.]+\]$/.test(host)
      ? null
      : `has an IPv6 literal ${JSON.stringify(host)} with characters other than hex digits, ":" and "."`;
  if (/[^A-Za-z0-9._-]/.test(host))
    return `has a host ${JSON.stringify(host)} with characters other than letters, digits, ".", "-" and "_"`;
  const labels = host.split('.');
  const last = labels.at(-1) === '' ? labels.at(-2) : labels.at(-1);
  if (last === undefined || !NUMERIC_LABEL.test(last) || DOTTED_QUAD.test(host)) return null;
  const whatwg = URL.canParse(`http://${host}/`) ? new URL(`http://${host}/`).hostname : null;
  const reading = whatwg === null ? 'an invalid IPv4 address' : `the IPv4 address ${whatwg}`;
  return `has a host ${JSON.stringify(host)} that is ${reading} to WHATWG URL and inet_aton but a name or another address to other parsers: write an address as four decimal numbers without leading zeros (127.0.0.1)`;
}
