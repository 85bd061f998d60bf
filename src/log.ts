import { pino } from 'pino';
import type { Logger } from 'pino';
import { REDACTED, SECRET_HEADERS } from './event/secrets.js';

/** Where credentials may sit in what is logged: header fields (secrets.ts), tokens. */
const REDACT_PATHS = [
  ...[...SECRET_HEADERS].flatMap((h) => [`headers["${h}"]`, `*.headers["${h}"]`]),
  'token',
  '*.token',
];

/**
 * Structured logs on stderr. Requests are recorded in the journal, not here; the log is for
 * the gateway's own life. Credentials are redacted wherever they might be attached.
 */
export function createLogger(level = process.env.TRAJGATE_LOG_LEVEL ?? 'info'): Logger {
  return pino(
    {
      level,
      base: null,
      redact: { paths: REDACT_PATHS, censor: REDACTED },
    },
    pino.destination({ fd: 2, sync: true }),
  );
}
