import { TrajgateError } from '../errors.js';

/**
 * How `trajgate check` reads the bridge's answers. Only what the gateway writes is accepted;
 * anything else (another server on the port, a proxy's error page, a half-written body) is an
 * E_GATEWAY error, which check turns into a refusal.
 */
const VERDICTS: ReadonlySet<unknown> = new Set(['ALLOW', 'REVIEW', 'PAUSE']);
const EXCERPT = 80;

export const answerError = (why: string): TrajgateError => new TrajgateError('E_GATEWAY', why);

/**
 * The hook's rendering of the ingest answer `{"verdict","allowed"?,"reason"?,"message"?}`
 * (ingress/ingest-answer.ts): null to go ahead — ALLOW, or REVIEW the gateway let through
 * (`policy.review: pass`) — else the refusal text for the model, as the gateway wrote it (the
 * words every transport sends: action/refusal.ts).
 */
export function judged(status: number, text: string): string | null {
  const answer = answerObject(status, text);
  const { verdict, allowed, reason, message } = answer;
  if (
    !VERDICTS.has(verdict) ||
    !optional(allowed, 'boolean') ||
    !optional(reason, 'string') ||
    !optional(message, 'string')
  )
    throw unexpected(text);
  const go = verdict === 'ALLOW' ? allowed !== false : verdict === 'REVIEW' && allowed === true;
  if (go) return null;
  // Made safe for a terminal where it is written (main's stderr goes through terminalLines).
  return (message as string | undefined)?.trim() || `trajgate: ${verdict}: ${reason ?? ''}`;
}

/** The answer to a result report, `{"recorded": SEQ, …}`; throws unless it says so. */
export function recorded(status: number, text: string): void {
  const { recorded: seq } = answerObject(status, text);
  if (!Number.isSafeInteger(seq)) throw unexpected(text);
}

/** A 2xx JSON object; a non-2xx status is reported with the gateway's `error.message`. */
function answerObject(status: number, text: string): Record<string, unknown> {
  let value: unknown;
  let json = true;
  try {
    value = JSON.parse(text);
  } catch {
    json = false;
  }
  if (status < 200 || status > 299) {
    const said = json ? (value as { error?: { message?: unknown } } | null)?.error?.message : null;
    throw answerError(
      `the gateway answered ${status}` +
        (typeof said === 'string' ? `: ${said}` : json ? '' : ` ${excerpt(text)}`),
    );
  }
  if (!json) throw answerError(`the gateway's answer is not JSON: ${excerpt(text)}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw unexpected(text);
  return value as Record<string, unknown>;
}

const optional = (value: unknown, type: 'boolean' | 'string'): boolean =>
  value === undefined || typeof value === type;

const unexpected = (text: string): TrajgateError =>
  answerError(`unexpected answer from the gateway: ${excerpt(text)}`);

function excerpt(text: string): string {
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ').trim();
  return JSON.stringify(flat.length > EXCERPT ? flat.slice(0, EXCERPT) + '…' : flat);
}
