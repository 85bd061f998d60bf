import { refusalText } from '../action/refusal.js';
import { TrajgateError } from '../errors.js';
import type { Verdict } from '../guard/guard.js';
import type { CallRuling } from './bridge-calls.js';

/** `POST /events`' answer: the decision, and for a refusal the text written for the model. */
export interface IngestAnswer {
  readonly verdict: Verdict;
  readonly boundary: string | null;
  readonly count: number;
  readonly reason: string;
  /** REVIEW is let through under `policy.review: pass`: the verdict alone does not say so. */
  readonly allowed: boolean;
  readonly message?: string;
}

/**
 * The ingest rendering of a call's ruling: its JSON answer, which `trajgate check` turns into
 * the hook's exit status and stderr (cli/check-answer.ts); a refusal that is no verdict answers
 * REVIEW with its reason. When nothing was decided (the journal cannot be written) it is an
 * outage, not a verdict: E_JOURNAL_WRITE (503).
 */
export function ingestAnswer(
  ruling: Exclude<CallRuling, { kind: 'gone' }>,
): IngestAnswer | TrajgateError {
  const d = ruling.decision;
  if (ruling.kind === 'forward') {
    return {
      verdict: d?.verdict ?? 'REVIEW',
      boundary: d?.boundary ?? null,
      count: d?.count ?? 0,
      reason: d?.reason ?? 'refused',
      allowed: true,
    };
  }
  const { verdict, boundary, reason, status } = ruling.refusal;
  if (verdict === null && status === 503) return new TrajgateError('E_JOURNAL_WRITE', reason.why);
  return {
    verdict: verdict ?? 'REVIEW',
    boundary,
    count: d?.count ?? 0,
    reason: reason.why,
    allowed: false,
    message: refusalText(ruling.refusal),
  };
}
