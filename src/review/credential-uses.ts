import type { CredentialUseView, EventRecord } from '../journal/records.js';
import { destination } from '../event/event.js';
import { parseNetworkTarget } from '../event/network-target.js';

/** Hosts a use keeps per credential and session: enough to show where, bounded. */
const HOSTS = 8;

/**
 * Which credentials a session's traffic carried and where: each one's uses (to its own hosts)
 * and sentinels out of place, the hosts, and the first event that carried it (how the agent
 * came to hold it, for a pause on its exfiltration).
 */
export function noteCredentials(
  uses: Map<string, CredentialUseView> | null,
  record: EventRecord,
): Map<string, CredentialUseView> | null {
  const out = record.exfiltration?.credential;
  if (record.credentials === undefined && out === undefined) return uses;
  const map = uses ?? new Map<string, CredentialUseView>();
  for (const name of record.credentials ?? [])
    map.set(name, counted(map.get(name), name, record, false));
  if (out !== undefined) map.set(out, counted(map.get(out), out, record, true));
  return map;
}

function counted(
  was: CredentialUseView | undefined,
  name: string,
  record: EventRecord,
  out: boolean,
): CredentialUseView {
  const host = hostOf(record);
  const hosts = was?.hosts ?? [];
  return {
    name,
    uses: (was?.uses ?? 0) + (out ? 0 : 1),
    exfiltrations: (was?.exfiltrations ?? 0) + (out ? 1 : 0),
    hosts: out || hosts.includes(host) || hosts.length >= HOSTS ? hosts : [...hosts, host],
    first: was?.first ?? {
      seq: record.seq,
      ts: record.ts,
      kind: record.kind,
      method: record.method,
      target: record.target,
    },
    last: record.ts,
  };
}

/** `host:port` of a network record, else its kind (a tool call, a command). */
function hostOf(record: EventRecord): string {
  if (record.kind !== 'network') return record.kind;
  try {
    return destination(parseNetworkTarget(record.target, record.method));
  } catch {
    return record.target;
  }
}
