import type { Event } from '../event/event.js';
import { destination } from '../event/event.js';
import { CREDENTIAL_EXFILTRATION, OWN_BOUNDARIES } from '../event/own-boundaries.js';

export { CREDENTIAL_EXFILTRATION, OWN_BOUNDARIES };

/** `credential github's sentinel in header X-Token of a request to evil.test:443`. */
export function exfiltrationReason(event: Event): string {
  const { credential, where } = event.exfiltration!;
  const to =
    event.subject.type === 'network'
      ? `a request to ${destination(event.subject)}`
      : `${event.kind} ${event.target}`;
  return `credential ${credential}'s sentinel in ${where} of ${to}: ${CREDENTIAL_EXFILTRATION}`;
}
