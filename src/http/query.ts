import { TrajgateError } from '../errors.js';

/** A query parameter that must be a whole number from `min` to `max` (`fallback` when absent). */
export function intParam(
  query: URLSearchParams,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const text = query.get(name);
  if (text === null) return fallback;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new TrajgateError(
      'E_BAD_FIELD',
      `query "${name}" must be a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`,
    );
  }
  return n;
}

/** Refuses parameters the route does not read: a misspelt one would be silently ignored. */
export function knownParams(query: URLSearchParams, known: readonly string[]): void {
  for (const name of query.keys()) {
    if (!known.includes(name)) {
      throw new TrajgateError(
        'E_BAD_FIELD',
        `query "${name}" is not known here (known: ${known.join(', ')})`,
      );
    }
  }
}
