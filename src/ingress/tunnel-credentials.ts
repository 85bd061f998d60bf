import { authority } from '../action/forward.js';
import type { EventInput, NetworkSubject } from '../event/event.js';
import type { ProxyContext } from './context.js';
import { sentinelIn } from './sentinel-watch.js';

/**
 * What a tunnel's credentials add to its CONNECT event: a sentinel in its target (a host name
 * spelling one, `tgs_github_….evil.test`) is out of place; a blind tunnel (`blind`: neither
 * intercepted nor read) to a host:port a credential of the session goes to is refused, since
 * trajgate could not swap its sentinel in there: it would leave as is.
 */
export function tunnelCredentials(
  set: ProxyContext['credentials'],
  session: string,
  target: string,
  subject: NetworkSubject,
  blind: boolean,
): Pick<EventInput, 'exfiltration' | 'refused'> {
  if (set.scanner === null) return {};
  const exfiltration = sentinelIn(set, target, 'CONNECT target');
  if (exfiltration !== undefined) return { exfiltration };
  const own = blind ? set.forHost(subject, session)[0] : undefined;
  if (own === undefined) return {};
  const to = authority(subject.host, subject.port);
  return {
    refused: `credential ${own.name} goes to ${to} only through TLS trajgate terminates (add it to tls.intercept): its sentinel would leave as is`,
  };
}
