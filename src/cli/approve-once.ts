import { TrajgateError } from '../errors.js';
import type { HeldBrief, Resumed } from '../review/sessions.js';
import { describeHeld } from '../review/sessions.js';
import type { HeldView, SessionDetail } from '../wire.js';
import { terminalText } from './table.js';

type Call = (method: 'GET' | 'POST', path: string, body?: object) => Promise<unknown>;

/** One line per request; targets come from agents, so each is made safe for a terminal. */
const listed = (held: readonly HeldBrief[]) =>
  held.map((h) => `  #${h.rid} ${terminalText(describeHeld(h))}`).join('\n');

/**
 * `trajgate approve SESSION --once [RID…]`: forwards the held requests named by rid as approved,
 * this once; the others stay held and the session stays paused (resume or deny decides them).
 * Without RIDs only a single held request is approved: with several, the user is shown them
 * and picks.
 */
export async function approveOnce(
  call: Call,
  session: string,
  args: readonly string[],
  print: (line: string) => void,
): Promise<Resumed> {
  const path = `/api/sessions/${encodeURIComponent(session)}`;
  let once = args.map((arg) => {
    if (!/^[1-9]\d{0,15}$/.test(arg))
      throw new TrajgateError(
        'E_USAGE',
        `approve --once: ${JSON.stringify(arg)} is not a request id (rid: a held request's number, as \`trajgate approve ${session} --once\` lists them)`,
      );
    return Number(arg);
  });
  if (once.length === 0) {
    const detail = (await call('GET', path)) as SessionDetail;
    const held: readonly HeldView[] = detail.heldRequests;
    if (held.length !== 1) {
      const which =
        held.length === 0
          ? `session ${session} holds no request: nothing to approve once`
          : `session ${session} holds ${held.length} requests; name the ones to approve once (trajgate approve ${session} --once RID…):\n${listed(held)}`;
      throw new TrajgateError('E_USAGE', which);
    }
    once = [(held[0] as HeldView).rid];
  }
  const result = (await call('POST', `${path}/resume`, { once })) as Resumed;
  const section = (title: string, held: readonly HeldBrief[]) =>
    held.length === 0 ? `${title}: none` : `${title}:\n${listed(held)}`;
  print(
    [
      `approved once in ${session}; the session stays paused`,
      section('forwarded as approved', result.once),
      section('still held (trajgate resume or deny decides them)', result.held),
    ].join('\n'),
  );
  return result;
}
