/**
 * Which protocols an HTTP Upgrade may switch to (`network.upgrades`). After a `101` the
 * connection is relayed blind, so a protocol that carries requests of its own (h2c: HTTP/2
 * streams, RFC 9113 § 3.1 deprecates it) would carry requests nobody judged. Only the listed
 * protocols are asked for; an upstream picks any one of those offered, so every one offered
 * must be listed.
 */

/** RFC 9110 § 7.8: protocol = protocol-name ["/" protocol-version], both tokens (§ 5.6.2). */
const PROTOCOL = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)(?:\/[!#$%&'*+.^_`|~0-9A-Za-z-]+)?$/;

/** The protocol-name of one Upgrade element, lower-cased; null when it is not a protocol. */
export function protocolName(element: string): string | null {
  const match = PROTOCOL.exec(element);
  return match === null ? null : (match[1] as string).toLowerCase();
}

export interface UpgradeRefusal {
  readonly status: 400 | 403;
  readonly reason: string;
}

/**
 * Why the Upgrade fields in `raw` ([name, value, ...]) may not be sent on, or null. `allowed`
 * are lower-cased protocol names; a listed name admits any version of it. Every Upgrade field
 * line counts (RFC 9110 § 5.3: lines combine into one list). Names compare case-insensitively,
 * as upstreams compare them (RFC 6455 § 4.2.1 for websocket). A malformed element is 400: an
 * upstream could read it as a protocol trajgate did not. One not listed is 403.
 */
export function upgradeRefusal(
  raw: readonly string[],
  allowed: readonly string[],
): UpgradeRefusal | null {
  const names: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() !== 'upgrade') continue;
    // Empty list elements are ignored (RFC 9110 § 5.6.1.2).
    for (const element of (raw[i + 1] as string).split(',')) {
      const trimmed = element.trim();
      if (trimmed === '') continue;
      const name = protocolName(trimmed);
      if (name === null) {
        return {
          status: 400,
          reason: `Upgrade ${JSON.stringify(trimmed.slice(0, 100))} is not a protocol (RFC 9110 § 7.8: name or name/version)`,
        };
      }
      names.push(name);
    }
  }
  if (names.length === 0) return { status: 400, reason: 'the Upgrade field names no protocol' };
  const refused = names.filter((name) => !allowed.includes(name));
  if (refused.length === 0) return null;
  const list = allowed.length === 0 ? 'none' : allowed.join(', ');
  return {
    status: 403,
    reason: `upgrading to ${refused.join(', ')} is not allowed: after the switch its traffic could not be judged (network.upgrades allows ${list})`,
  };
}
