import type { Verdict } from '../guard/guard.js';

/** Why a held request ended without being sent. */
export type HoldEnd = 'timeout' | 'denied' | 'blocked' | 'shutdown' | 'credentials' | 'never';

/**
 * What happens next: a REVIEW is flagged for a person and its session runs on; a PAUSE's
 * session stays paused, the request ended as HoldEnd says.
 */
export type Next = 'flagged' | HoldEnd;

/** Why a request was refused, in pieces: each transport renders them. */
export interface Reason {
  /** What was refused, in the agent's words (`GET http://host/x`); null when not named. */
  readonly what: string | null;
  /** Why: the guard's reason, or what was wrong (bad input, an outage, the upstream). */
  readonly why: string;
  /** What happens next; null for a refusal that is no verdict (nothing follows from it). */
  readonly next: Next | null;
}

/**
 * A refusal as trajgate decided it, before any transport renders it: the proxy and the
 * bridge's plain HTTP path as an HTTP response (action/respond.ts), the bridge's MCP path as a
 * JSON-RPC error (ingress/mcp-refusal.ts), ingest as its JSON answer (ingress/ingest-answer.ts),
 * which `trajgate check` writes for the hook (cli/check-answer.ts). Each sends refusalText.
 */
export interface Refusal {
  /** REVIEW or PAUSE for a policy refusal; null for bad input, an outage, an upstream failure. */
  readonly verdict: Exclude<Verdict, 'ALLOW'> | null;
  /** The boundary behind a verdict, when one is known. */
  readonly boundary: string | null;
  readonly reason: Reason;
  /** Its class, as HTTP numbers it: 403 for a verdict; 400, 407, 429, 502, 503, … */
  readonly status: number;
}

/** A REVIEW or PAUSE: 403, what was refused, why, and what happens next. */
export function verdictRefusal(
  verdict: Exclude<Verdict, 'ALLOW'>,
  boundary: string | null,
  what: string,
  why: string,
  end: HoldEnd = 'blocked',
): Refusal {
  const next = verdict === 'REVIEW' ? 'flagged' : end;
  return { verdict, boundary, reason: { what, why, next }, status: 403 };
}

/** Any other refusal (400, 407, 429, 502, 503, 504): its status and why. */
export function plainRefusal(status: number, why: string): Refusal {
  return { verdict: null, boundary: null, reason: { what: null, why, next: null }, status };
}

/** The one line journaled as the request's error: `REVIEW: why`, or why alone. */
export function refusalLine(refusal: Refusal): string {
  const { verdict, reason } = refusal;
  return verdict === null ? reason.why : `${verdict}: ${reason.why}`;
}

/**
 * The text written for the model that reads the refusal, the same words on every transport:
 * what was refused, why, and what happens next; one line for a refusal that is no verdict.
 */
export function refusalText({ verdict, boundary, reason }: Refusal): string {
  const { what, why, next } = reason;
  if (verdict === null || next === null) return `trajgate: ${why}\n`;
  const lines =
    next === 'flagged'
      ? [
          `trajgate refused this request: ${what}`,
          `Reason: ${why}.`,
          'It was not sent, and it has been flagged for a person to review.',
          `Do not retry it or look for another way to reach it: crossing the ${boundary ?? 'same'} boundary again pauses this session until an operator decides.`,
          'If you need this access for your task, say so in your output and continue with other work.',
        ]
      : [
          `trajgate paused this session: ${what} was not sent.`,
          `Reason: ${why}.`,
          END_TEXT[next],
          'Wait for an operator; do not try other routes, they are held as well.',
        ];
  return lines.join('\n') + '\n';
}

const END_TEXT: Record<HoldEnd, string> = {
  blocked:
    'Every request of this session is refused until an operator reviews the recent events and resumes it.',
  timeout:
    'No operator decided within the hold time. Every request of this session stays held until an operator reviews the recent events and resumes it.',
  denied: 'An operator reviewed the recent events and denied it. The session stays paused.',
  shutdown: 'The gateway is shutting down. The session stays paused after it restarts.',
  credentials:
    'The credentials it was sent with are no longer valid (its agent was removed or its token changed). The session stays paused.',
  never:
    'It carries a credential where it does not belong, so it is never sent. The session stays paused until an operator reviews the recent events and resumes it.',
};

/** A refusal as an HTTP response: its status, headers and the plain-text body for the model. */
export interface HttpRefusal {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}
