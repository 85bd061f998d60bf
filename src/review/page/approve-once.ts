// "Approve once" on one held request: forwards that request as approved, this once; the
// session stays paused and every other held request stays held. "Approve once and reset counts"
// then resumes the session with its counts at zero (the others judged again), as the chat
// notification's link does. The confirmation lists every held request and marks the one covered.

import type { Actions } from './actions.js';
import { call, sessionPath } from './api.js';
import { confirmAction } from './confirm.js';
import type { HeldView } from '../../wire.js';

interface Brief {
  readonly rid: number;
  readonly what: string;
  readonly bytes: number | null;
}

/** `POST http://h/x (12 bytes)`, as the gateway describes a held request. */
export const describeHeld = (h: Pick<Brief, 'what' | 'bytes'>): string =>
  h.bytes === null ? h.what : `${h.what} (${h.bytes} byte${h.bytes === 1 ? '' : 's'})`;

const listed = (hs: readonly Brief[]) =>
  hs.length === 0 ? 'none' : hs.map((h) => `#${h.rid} ${describeHeld(h)}`).join(', ');

export async function approveOnce(
  actions: Actions,
  session: string,
  chosen: HeldView,
  held: readonly HeldView[],
  reset = false,
): Promise<void> {
  const others = held.filter((h) => h.rid !== chosen.rid).length;
  const then = reset
    ? ' Then the session resumes with its counts reset to zero (approvals kept): its next unapproved crossing is a REVIEW, not a pause.'
    : '';
  const ok = await confirmAction({
    title: reset ? 'Approve this request once and reset the counts?' : 'Approve this request once?',
    lines: [
      ['Session', session],
      ...held.map((h): [string, string] => [
        h.rid === chosen.rid ? 'Approved once' : 'Stays held',
        `#${h.rid} ${describeHeld(h)}`,
      ]),
    ],
    note: reset
      ? `Forwards the 1 request marked "Approved once" as approved, this once.${then}` +
        (others === 0 ? '' : ` The other held requests are judged again.`)
      : `Forwards the 1 request marked "Approved once" as approved, this once; the session stays paused.` +
        (others === 0
          ? ''
          : others === 1
            ? ' The other held request stays held: it is judged again when the session is resumed.'
            : ` The other ${others} held requests stay held: they are judged again when the session is resumed.`),
    confirm: reset ? 'Approve once and reset' : 'Approve once',
    tone: 'go',
  });
  if (!ok) return;
  await actions.run(async () => {
    const r = await call<{ once: Brief[]; held: Brief[] }>(
      'POST',
      `${sessionPath(session)}/resume`,
      { once: [chosen.rid] },
    );
    if (!reset)
      return `Approved once, forwarded: ${listed(r.once)}; still held, the session paused: ${listed(r.held)}.`;
    const resumed = await call<{ released: number }>('POST', `${sessionPath(session)}/resume`, {
      reset: true,
    });
    return `Approved once, forwarded: ${listed(r.once)}; resumed with the counts reset: ${resumed.released} other held request(s) judged again.`;
  });
}
