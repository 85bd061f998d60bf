import type { EventInput, Exfiltration } from '../event/event.js';
import type { ProxyContext } from './context.js';
import { sentinelIn } from './sentinel-watch.js';

/** An argument's name as journaled: a name is the agent's, so bounded. */
const MAX_NAME = 64;

/**
 * The first sentinel in a tool call's arguments or a hook's tool input: in any string at any
 * depth, keys too (a file's `content`, a `path`, an encoded blob), named by the top-level
 * field it is in (`argument content`). None of it goes to a credential's host to be swapped.
 */
export function argumentsExfiltration(
  set: Pick<ProxyContext['credentials'], 'scanner'>,
  args: unknown,
  label: string,
): Exfiltration | undefined {
  if (set.scanner === null || typeof args !== 'object' || args === null) return undefined;
  for (const [key, value] of Object.entries(args)) {
    const where = `${label} ${key.length > MAX_NAME ? `${key.slice(0, MAX_NAME)}…` : key}`;
    const found = sentinelIn(set, JSON.stringify({ [key]: value }), where);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * A call's events with the sentinel it carries on the first, which the guard pauses on at
 * once; a call that makes no event gets one of its own (`tool`, named `what`) to carry it.
 */
export function carrying(
  events: readonly EventInput[],
  exfiltration: Exfiltration | undefined,
  what: string,
): readonly EventInput[] {
  if (exfiltration === undefined) return events;
  const [first = { kind: 'tool', target: what }, ...rest] = events;
  return [{ ...first, exfiltration }, ...rest];
}
