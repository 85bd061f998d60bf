import type { Event } from '../event/event.js';
import { destination } from '../event/event.js';
import { TRAJGATE_FILES } from './protected.js';

/**
 * The boundary of credential sentinels found where they do not belong: never approvable, it
 * pauses at the first crossing. A sentinel is worthless outside its hosts, so what it proves is
 * the attempt: the person deciding sees it with the events before it.
 */
export const CREDENTIAL_EXFILTRATION = 'credential-exfiltration';

/** `credential github's sentinel in header X-Token of a request to evil.test:443`. */
export function exfiltrationReason(event: Event): string {
  const { credential, where } = event.exfiltration!;
  const to =
    event.subject.type === 'network'
      ? `a request to ${destination(event.subject)}`
      : `${event.kind} ${event.target}`;
  return `credential ${credential}'s sentinel in ${where} of ${to}: ${CREDENTIAL_EXFILTRATION}`;
}

/** trajgate's boundaries: no config may name them, no approval suggested covers them. */
export const OWN_BOUNDARIES: ReadonlySet<string> = new Set([
  TRAJGATE_FILES,
  CREDENTIAL_EXFILTRATION,
]);
