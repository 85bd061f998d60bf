/**
 * One error class with a stable `code` per failure (undici's shape: `err.code`, `err.name`, the
 * message), used by the CLI, the admin API, the bridge and the proxy. Scripts and tests match on
 * the code, people read the message. Codes are part of the contract: ERRORS gives each one's
 * HTTP status and CLI exit code, and the table in docs/errors.md lists them all
 * (test/unit/error-codes.test.ts holds the two together).
 */

/** How a failure is answered: `status` over HTTP, `exit` by the CLI; null where it never is. */
interface Answer {
  readonly status: number | null;
  readonly exit: 1 | 2 | null;
}

export const ERRORS = {
  // Config: the CLI exits 1; POST /api/reload answers 400 and keeps the running config.
  E_CONFIG_READ: { status: 400, exit: 1 },
  E_CONFIG_YAML: { status: 400, exit: 1 },
  E_CONFIG_INVALID: { status: 400, exit: 1 },
  // Input: events, bodies, tool paths, patterns.
  E_EVENT_INVALID: { status: 400, exit: 1 },
  E_BODY_UNSUPPORTED: { status: 415, exit: null },
  E_TOO_LARGE: { status: 413, exit: null },
  E_BODY_TIMEOUT: { status: 408, exit: null },
  E_PATH_REFUSED: { status: 400, exit: null },
  E_PATTERN_INVALID: { status: 400, exit: null },
  E_INPUT_READ: { status: null, exit: 1 },
  E_FILE_WRITE: { status: null, exit: 1 },
  // The journal.
  E_JOURNAL_CORRUPT: { status: null, exit: 1 },
  E_JOURNAL_WRITE: { status: 503, exit: 1 },
  E_CHAIN_BROKEN: { status: null, exit: 1 },
  E_STORE_DOWN: { status: 503, exit: 1 },
  E_STORE_CORRUPT: { status: 503, exit: 1 },
  // The CLI.
  E_USAGE: { status: null, exit: 2 },
  E_LISTEN: { status: null, exit: 1 },
  E_ADMIN_API: { status: null, exit: 1 },
  E_GATEWAY: { status: null, exit: 2 },
  E_TIMEOUT: { status: null, exit: 2 },
  E_CONNECT: { status: null, exit: 1 },
  // The admin API and decision links.
  E_UNAUTHORIZED: { status: 401, exit: null },
  E_NOT_FOUND: { status: 404, exit: null },
  E_METHOD: { status: 405, exit: null },
  E_BAD_JSON: { status: 400, exit: null },
  E_BAD_FIELD: { status: 400, exit: null },
  E_UNKNOWN_SESSION: { status: 404, exit: 1 },
  E_UNKNOWN_EVENT: { status: 404, exit: null },
  E_UNKNOWN_APPROVAL: { status: 404, exit: null },
  E_UNKNOWN_CREDENTIAL: { status: 404, exit: null },
  E_UNKNOWN_SERVER: { status: 404, exit: null },
  E_UNKNOWN_BUDGET: { status: 404, exit: null },
  E_NOT_PENDING: { status: 409, exit: null },
  E_TOOL_CHANGED: { status: 409, exit: null },
  E_CONFIG_APPROVAL: { status: 409, exit: null },
  E_NOT_PAUSED: { status: 409, exit: null },
  E_NOT_HELD: { status: 409, exit: null },
  E_NO_CAPTURE: { status: 404, exit: null },
  E_CAPTURE_READ: { status: 500, exit: null },
  E_LINK_INVALID: { status: 403, exit: null },
  E_LINK_USED: { status: 410, exit: null },
  E_LINK_EXPIRED: { status: 410, exit: null },
  E_BUSY: { status: 429, exit: null },
  // Also `start`'s, when a part fails to open in a way nothing foresaw.
  E_INTERNAL: { status: 500, exit: 1 },
  // The proxy: an intercepted upstream's address refused at connect.
  E_EGRESS: { status: 502, exit: null },
  E_FLOW_CLOSED: { status: 403, exit: null },
  // The review page: the API answered without JSON (shown on the page, never sent).
  E_NOT_JSON: { status: null, exit: null },
} as const satisfies Record<`E_${string}`, Answer>;

export type ErrorCode = keyof typeof ERRORS;

export class TrajgateError extends Error {
  readonly code: ErrorCode;
  /** Individual problems, each already naming its place (config key path, line number). */
  readonly details: readonly string[];
  /** The HTTP status it is answered with: its code's, unless this failure says otherwise. */
  readonly status: number | null;

  constructor(
    code: ErrorCode,
    message: string,
    details: readonly string[] = [],
    options: { readonly status?: number } = {},
  ) {
    super(message);
    this.name = 'TrajgateError';
    this.code = code;
    this.details = details;
    this.status = options.status ?? ERRORS[code].status;
  }
}

export function isTrajgateError(err: unknown): err is TrajgateError {
  return err instanceof TrajgateError;
}

/** The CLI's exit code for a command that failed with `code` (1 where the table has none). */
export function exitCode(code: ErrorCode): 1 | 2 {
  return ERRORS[code].exit ?? 1;
}

/** The errno code of a Node system error, or undefined for anything else. */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
