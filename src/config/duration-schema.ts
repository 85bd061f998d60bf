import { z } from 'zod';
import { parseDuration } from './formats.js';

/** A duration like 100ms, 55s, 2m, 1h or 7d, as milliseconds. */
export const duration = z.string().transform((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration like 100ms, 55s, 2m or 1h, got ${JSON.stringify(text)}`,
    });
    return z.NEVER;
  }
  return ms;
});
