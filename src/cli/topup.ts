import { parseBytes } from '../config/formats.js';
import { TrajgateError } from '../errors.js';
import type { BudgetView, SessionDetail, TopUpAnswer } from '../wire.js';
import { usageOf } from './help.js';
import { pausedAgainLine } from './operator-tables.js';
import { terminalText } from './table.js';

type Call = (method: 'GET' | 'POST', path: string, body?: object) => Promise<unknown>;

/**
 * `trajgate topup SESSION BUDGET [+N]`: raises the session's limit of the budget by N in its
 * current window (without N: by the budget's own limit); a session the budget paused resumes.
 * N takes byte units for a bytesUp budget (`+10MB`).
 */
export async function topUp(
  call: Call,
  args: readonly string[],
  write: ((text: string) => void) | null,
): Promise<TopUpAnswer> {
  const [session = '', budget = '', more] = args;
  const path = `/api/sessions/${encodeURIComponent(session)}`;
  const amount =
    more === undefined ? ownLimit((await call('GET', path)) as SessionDetail, budget) : parse(more);
  const result = (await call('POST', `${path}/topup`, { budget, amount })) as TopUpAnswer;
  if (write !== null) {
    const b = result.budget;
    const now =
      b === null ? '' : ` (now ${b.used} of ${b.limit} ${b.measure} used within ${b.within})`;
    const resumed = result.resumed
      ? `; resumed, ${result.released} held request(s) judged again`
      : '';
    write(terminalText(`topped up ${budget} of ${session} by ${amount}${now}${resumed}`));
    if (result.pausedAgain) write(terminalText(pausedAgainLine(session, result.pausedAgain)));
  }
  return result;
}

/** `+N`, `N`, or with a byte unit (`+10MB`). */
function parse(text: string): number {
  const plain = text.replace(/^\+/, '');
  const n = /^\d+$/.test(plain) ? Number(plain) : parseBytes(plain);
  if (n !== undefined && Number.isSafeInteger(n) && n >= 1) return n;
  throw new TrajgateError(
    'E_USAGE',
    `the amount must be +N, a whole number of at least 1 (bytes may take a unit: +10MB), got ${JSON.stringify(text)}\n${usageOf('topup')}`,
  );
}

function ownLimit(detail: SessionDetail, budget: string): number {
  const b: BudgetView | undefined = detail.budgets.find((x) => x.name === budget);
  if (b !== undefined) return b.limit - b.toppedUp;
  const known = detail.budgets.map((x) => x.name).join(', ') || 'none configured';
  throw new TrajgateError('E_USAGE', `no budget ${JSON.stringify(budget)} (budgets: ${known})`);
}
