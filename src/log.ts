import { pino } from 'pino';
import type { Logger } from 'pino';

/**
 * Structured logs on stderr. Requests are recorded in the journal, not here; the log is for
 * the gateway's own life. Credentials are redacted wherever they might be attached.
 */
export function createLogger(level = process.env.TRAJGATE_LOG_LEVEL ?? 'info'): Logger {
  return pino(
    {
      level,
      base: null,
      redact: {
        paths: [
          '*.headers.authorization',
          '*.headers["proxy-authorization"]',
          '*.headers.cookie',
          '*.headers["set-cookie"]',
          'headers.authorization',
          'headers["proxy-authorization"]',
          'headers.cookie',
          'token',
          '*.token',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: 2, sync: true }),
  );
}
