import { TrajgateError } from '../errors.js';
import type { CredentialAnswer, CredentialView } from '../wire.js';
import { usageOf } from './help.js';
import { table, terminalText } from './table.js';

type Call = (method: 'GET' | 'POST', path: string, body?: object) => Promise<unknown>;

/**
 * `trajgate credentials` lists the running gateway's credentials (never a value);
 * `credentials revoke NAME` and `restore NAME` change one over the admin API.
 */
export async function credentials(
  call: Call,
  args: readonly string[],
  write: ((text: string) => void) | null,
): Promise<unknown> {
  if (args.length === 0) {
    const result = (await call('GET', '/api/credentials')) as { credentials: CredentialView[] };
    write?.(credentialsTable(result.credentials));
    return result;
  }
  const [verb, name] = args;
  if ((verb !== 'revoke' && verb !== 'restore') || name === undefined || args.length > 2)
    throw new TrajgateError('E_USAGE', usageOf('credentials'));
  const path = `/api/credentials/${encodeURIComponent(name)}/${verb}`;
  const result = (await call('POST', path, {})) as CredentialAnswer;
  const { changed, closed } = result;
  const flows = closed > 0 ? `; ${closed} flow(s) carrying it closed` : '';
  const done = verb === 'revoke' ? 'revoked' : 'restored';
  write?.(
    terminalText(
      changed
        ? `${done} credential ${name}${verb === 'revoke' ? ': requests carrying its sentinel are refused' : ''}${flows}`
        : `credential ${name} was already ${done}; nothing changed`,
    ),
  );
  return result;
}

function credentialsTable(list: readonly CredentialView[]): string {
  if (list.length === 0) return 'no credentials configured';
  return table(
    ['NAME', 'HOSTS', 'ENV', 'SENTINEL', 'GIVEN TO', 'STATE'],
    list.map((c) => [
      c.name,
      c.hosts.join(' '),
      c.env,
      c.sentinel,
      givenTo(c),
      c.revoked ? 'REVOKED' : 'active',
    ]),
  );
}

/** `every agent`, or the agents and roles it names. */
function givenTo(c: CredentialView): string {
  const named = [...(c.agents ?? []), ...(c.roles ?? []).map((r) => `role ${r}`)];
  return named.length === 0 ? 'every agent' : named.join(', ');
}
