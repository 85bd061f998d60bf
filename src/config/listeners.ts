import { isIP } from 'node:net';
import { canonicalHost } from '../event/network-target.js';
import type { HostPort } from './formats.js';
import { formatHostPort } from './formats.js';
import type { Config } from './load.js';
import type { Locator, Problem } from './problems.js';

/** What a listen address binds: IPv4 and IPv6 addresses, `*` for every one, or a name. */
interface Binds {
  readonly v4?: string;
  readonly v6?: string;
  readonly name?: string;
}

/**
 * What `host` binds. `::` takes IPv4 too (Node listens dual-stack); an IPv4-mapped address
 * (`::ffff:127.0.0.1`) is its IPv4 address; `localhost` may be either loopback. A name is
 * compared by name: which address it resolves to is not known before start.
 */
function binds(host: string): Binds {
  let h: string;
  try {
    h = canonicalHost(host.includes(':') ? `[${host}]` : host);
  } catch {
    h = host.toLowerCase();
  }
  if (h === '0.0.0.0') return { v4: '*' };
  if (h === '::') return { v4: '*', v6: '*' };
  if (h === 'localhost') return { v4: '127.0.0.1', v6: '::1' };
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h);
  if (mapped) {
    const [hi, lo] = [parseInt(mapped[1] as string, 16), parseInt(mapped[2] as string, 16)];
    return { v4: [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.') };
  }
  if (isIP(h) === 4) return { v4: h };
  if (isIP(h) === 6) return { v6: h };
  return { name: h };
}

function overlap(a: Binds, b: Binds): boolean {
  const same = (x?: string, y?: string) =>
    x !== undefined && y !== undefined && (x === '*' || y === '*' || x === y);
  const wildcard = (x: Binds) => x.v4 === '*' || x.v6 === '*';
  if (a.name !== undefined || b.name !== undefined)
    return a.name === b.name || wildcard(a) || wildcard(b);
  return same(a.v4, b.v4) || same(a.v6, b.v6);
}

/**
 * Listeners (`listen.*`) that would share a port on overlapping addresses: start would fail
 * on the second with EADDRINUSE. Each pair is named once, at the key the file sets (the later
 * one when both are), with the other key, its address and its line.
 */
export function listenerConflicts(config: Config, at: Locator): Problem[] {
  const listeners = Object.entries(config.listen).map(([key, addr]: [string, HostPort]) => ({
    key: `listen.${key}`,
    path: ['listen', key],
    addr,
  }));
  type Listener = (typeof listeners)[number];
  const inFile = (l: Listener) => at.line(l.path) !== 'its default';
  const problems: Problem[] = [];
  listeners.forEach((a, i) => {
    for (const b of listeners.slice(i + 1)) {
      const port = a.addr.port;
      if (port === 0 || port !== b.addr.port) continue;
      if (!overlap(binds(a.addr.host), binds(b.addr.host))) continue;
      const [here, other] = inFile(b) || !inFile(a) ? [b, a] : [a, b];
      problems.push({
        path: here.path,
        reads: [other.path],
        text: `${here.key}: ${formatHostPort(here.addr)} overlaps ${other.key} (${formatHostPort(other.addr)}, ${at.line(other.path)}): both would listen on port ${port}, and start would fail (EADDRINUSE); give each listener its own port`,
      });
    }
  });
  return problems;
}
