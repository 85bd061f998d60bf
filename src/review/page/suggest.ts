// What the approve and block forms propose for an event: the gateway's suggestion
// (`GET /api/events/:seq`, the trigger's method and path prefix), the same one
// `trajgate approve --from SEQ` uses, so page and CLI cannot disagree. The operator edits it.

import { call } from './api.js';
import type { EventAnswer } from '../../wire.js';

export type Suggestion = EventAnswer['suggestion'];

/** Asked once per event while the page shows its session; a failure is asked again later. */
const asked = new Map<number, Promise<Suggestion>>();

export function suggestion(seq: number): Promise<Suggestion> {
  let answer = asked.get(seq);
  if (answer === undefined) {
    answer = call<EventAnswer>('GET', `/api/events/${seq}`).then((a) => a.suggestion);
    answer.catch(() => asked.delete(seq));
    asked.set(seq, answer);
  }
  return answer;
}

/** Another session, or signed out: nothing of this one is kept. */
export function forgetSuggestions(): void {
  asked.clear();
}
