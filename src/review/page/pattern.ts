// What the approve form proposes for an event. The operator edits it before approving; the
// API parses it and answers 400 with the reason when it does not parse.

const DEFAULT_PORT: Record<string, string> = {
  'http:': '80',
  'https:': '443',
  'ws:': '80',
  'wss:': '443',
};

/**
 * A network target (`https://host/path`, `http://host:8080/x`, or a tunnel's `host:443`) →
 * the narrowest pattern of the allowlist grammar that still approves the destination rather
 * than one URL: `scheme://host` on the scheme's own port, `host:port` on another port (which
 * approves a CONNECT tunnel to it too); a network pattern's path would be a prefix, so none
 * is proposed. Other kinds approve their target as a glob that matches it alone: its `*`, `?`
 * and `\` escaped (an agent may name a file `*`), to be widened (`dir/**`) by hand if meant.
 */
export function suggestPattern(kind: string, target: string): string {
  if (kind !== 'network') return target.replace(/[*?\\]/g, '\\$&');
  const text = target.trim();
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text; // host:port of a tunnel
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  const scheme = url.protocol;
  if (url.hostname === '') return text;
  if (url.port !== '' && url.port !== DEFAULT_PORT[scheme]) return `${url.hostname}:${url.port}`;
  return `${scheme}//${url.hostname}`;
}
