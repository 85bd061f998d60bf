import { TrajgateError } from '../errors.js';
import type { EventInput } from './event.js';

const METHOD = /^[A-Za-z]{1,16}$/;

/**
 * Checks an event as it arrives from outside (a replay line, an ingest body): an object with a
 * known `kind` and a non-empty string `target`; `approved` and `method` optional. Each problem
 * names its field; the caller adds where the event came from.
 */
export function validateEventInput(value: unknown, knownKinds: ReadonlySet<string>): EventInput {
  const fail = (what: string): never => {
    throw new TrajgateError('E_EVENT_INVALID', what);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail('expected a JSON object with "kind" and "target"');
  }
  const { kind, target, approved, method } = value as Record<string, unknown>;
  if (typeof kind !== 'string') return fail(`"kind" must be a string, got ${describe(kind)}`);
  if (!knownKinds.has(kind)) {
    return fail(`unknown kind ${JSON.stringify(kind)} (known: ${[...knownKinds].join(', ')})`);
  }
  if (typeof target !== 'string') return fail(`"target" must be a string, got ${describe(target)}`);
  if (target === '') return fail('"target" is empty');
  if (approved !== undefined && typeof approved !== 'boolean') {
    return fail(`"approved" must be true or false, got ${describe(approved)}`);
  }
  if (method !== undefined && (typeof method !== 'string' || !METHOD.test(method))) {
    return fail(`"method" must be an HTTP method name, got ${describe(method)}`);
  }
  return {
    kind,
    target,
    ...(approved === undefined ? {} : { approved }),
    ...(method === undefined ? {} : { method }),
  };
}

export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value);
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}
