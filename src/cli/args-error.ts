import { errnoCode } from '../errors.js';

/**
 * node:util parseArgs's error as one line of ours, or null for any other error: its message
 * runs on with advice about `--` that suits a script author, not someone who mistyped a flag.
 * The first sentence says what was wrong ("Unknown option '--foo'", "Option '--config
 * <value>' argument missing", "Unexpected argument 'x'").
 */
export function argsError(err: unknown): string | null {
  if (!errnoCode(err)?.startsWith('ERR_PARSE_ARGS')) return null;
  const first = ((err as Error).message.split(/\.\s/)[0] ?? '').trim();
  return first.charAt(0).toLowerCase() + first.slice(1);
}
