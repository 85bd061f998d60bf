/**
 * One error class with a stable `code` per failure, so scripts and tests match on the code
 * and people read the message. Codes are part of the contract (README, "Error codes").
 */
export type ErrorCode =
  | 'E_CONFIG_READ'
  | 'E_CONFIG_YAML'
  | 'E_CONFIG_INVALID'
  | 'E_EVENT_INVALID'
  | 'E_BODY_UNSUPPORTED'
  | 'E_PATH_REFUSED'
  | 'E_PATTERN_INVALID'
  | 'E_JOURNAL_CORRUPT'
  | 'E_JOURNAL_WRITE'
  | 'E_INPUT_READ'
  | 'E_NOT_PAUSED'
  | 'E_LISTEN'
  | 'E_ADMIN_API'
  | 'E_GATEWAY'
  | 'E_TIMEOUT'
  | 'E_UNKNOWN_SESSION'
  | 'E_UNKNOWN_APPROVAL'
  | 'E_CONFIG_APPROVAL'
  | 'E_USAGE';

export class TrajgateError extends Error {
  readonly code: ErrorCode;
  /** Individual problems, each already naming its place (config key path, line number). */
  readonly details: readonly string[];

  constructor(code: ErrorCode, message: string, details: readonly string[] = []) {
    super(message);
    this.name = 'TrajgateError';
    this.code = code;
    this.details = details;
  }
}

export function isTrajgateError(err: unknown): err is TrajgateError {
  return err instanceof TrajgateError;
}

/** The errno code of a Node system error, or undefined for anything else. */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
