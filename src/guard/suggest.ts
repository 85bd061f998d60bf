import { parseNetworkPattern } from '../event/network-pattern.js';
import type { Suggestion } from '../wire.js';

/** What an event asked for, as its journal record keeps it. */
export interface Asked {
  readonly kind: string;
  readonly target: string;
  readonly method?: string | undefined;
  readonly tree?: true | undefined;
}

export type { Suggestion };

/**
 * The approval that fits a refused event without widening it: a request's method and the
 * path prefix its path sits in (`POST http://h:8080/v1/x` → `POST http://h:8080/v1/`, so an
 * approval for one refused POST does not approve every method or path on the host); a
 * tunnel's `host:port` as it is (a tunnel shows no method or path). Other kinds approve their
 * target alone: a glob with `*`, `?` and `\` escaped (an agent may name a file `*`), and for
 * a tree read what is under it (`/x/**`: only that approves a read of the whole tree).
 */
export function suggestApproval(event: Asked): Suggestion {
  const { kind, target } = event;
  if (kind !== 'network') {
    const literal = target.replace(/[*?\\]/g, '\\$&');
    return { kind, pattern: event.tree === true ? `${literal.replace(/\/$/, '')}/**` : literal };
  }
  return { kind, pattern: networkSuggestion(target, event.method) };
}

function networkSuggestion(target: string, method: string | undefined): string {
  if (!target.includes('://')) return target; // a tunnel's host:port
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return target;
  }
  const path = url.pathname;
  const prefix = path.slice(0, path.lastIndexOf('/') + 1);
  const verb = method && method !== 'CONNECT' ? `${method.toUpperCase()} ` : '';
  const pattern = `${verb}${url.protocol}//${url.host}${prefix === '/' ? '' : prefix}`;
  try {
    parseNetworkPattern(pattern);
    return pattern;
  } catch {
    // A path the grammar cannot say as a prefix: the method on the whole origin.
    return `${verb}${url.protocol}//${url.host}`;
  }
}
