import { TrajgateError } from '../errors.js';
import { isAbsolute } from 'node:path';
import type { EventInput } from './event.js';
import { PATH_KINDS } from './event.js';
import { linked } from './paths.js';

const METHOD = /^[A-Za-z]{1,16}$/;
/** Longest runner's call id (`call`) taken. */
export const CALL_CHARS = 256;

/** Set by an operator (`approved`, `approvedBy`) or by trajgate (the rest), never by an agent. */
const NOT_FROM_AGENTS = [
  'approved',
  'approvedBy',
  'denied',
  'resolved',
  'alias',
  'verdict',
  'session',
  'source',
  'ts',
  'seq',
  'exfiltration',
  'credentials',
  'toolChange',
];

const fail = (what: string): never => {
  throw new TrajgateError('E_EVENT_INVALID', what);
};

/**
 * Checks an event an agent sends (an ingest body): an object with a known `kind` and a
 * non-empty string `target`; `method`, `failed`, `tree` (a read of everything under the
 * target), `call` (the runner's id of the call) and `command` (a command event's command line)
 * optional. A field only an operator or the gateway sets is refused, not ignored: the sender
 * learns that approval is an operator's act. Each problem names its field; the caller adds
 * where the event came from.
 */
export function validateEventInput(value: unknown, knownKinds: ReadonlySet<string>): EventInput {
  const fields = objectOf(value);
  const taken = NOT_FROM_AGENTS.find((k) => Object.hasOwn(fields, k));
  if (taken === 'approved' || taken === 'approvedBy') {
    return fail(
      `"${taken}" cannot come from an agent: only an operator approves (trajgate approve, the review page)`,
    );
  }
  if (taken !== undefined)
    return fail(`"${taken}" is set by trajgate, not by the sender: remove it`);
  return eventOf(fields, knownKinds);
}

/**
 * A recorded event (a replay line, a journal record, which carries the fields above): `kind`,
 * `target` and `method` checked as for an agent's, `approved` (and the pattern that approved
 * it, `approvedBy`) taken as the record says.
 */
export function validateRecordedEvent(
  value: unknown,
  knownKinds: ReadonlySet<string>,
): { input: EventInput; approved: boolean; approvedBy?: string } {
  const fields = objectOf(value);
  const { approved, approvedBy } = fields;
  if (approved !== undefined && typeof approved !== 'boolean') {
    return fail(`"approved" must be true or false, got ${describeValue(approved)}`);
  }
  const input = withToolChange(
    withCredentials(withReadings(eventOf(fields, knownKinds), fields), fields),
    fields,
  );
  // Approved by a pattern (a journal's event record), not let through by an operator's act.
  if (approved === true && typeof approvedBy === 'string') return { input, approved, approvedBy };
  return { input, approved: approved === true };
}

function objectOf(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail('expected a JSON object with "kind" and "target"');
  }
  return value as Record<string, unknown>;
}

function eventOf(fields: Record<string, unknown>, knownKinds: ReadonlySet<string>): EventInput {
  const { kind, target, method, failed, tree, call, command } = fields;
  if (typeof kind !== 'string') return fail(`"kind" must be a string, got ${describeValue(kind)}`);
  if (!knownKinds.has(kind)) {
    return fail(`unknown kind ${JSON.stringify(kind)} (known: ${[...knownKinds].join(', ')})`);
  }
  if (typeof target !== 'string') {
    return fail(`"target" must be a string, got ${describeValue(target)}`);
  }
  if (target === '') return fail('"target" is empty');
  if (method !== undefined && (typeof method !== 'string' || !METHOD.test(method))) {
    return fail(`"method" must be an HTTP method name, got ${describeValue(method)}`);
  }
  if (failed !== undefined && typeof failed !== 'boolean') {
    return fail(`"failed" must be true or false, got ${describeValue(failed)}`);
  }
  // Only widens what read rules see (a runner's `grep -r`), so an agent may say it.
  if (tree !== undefined && (tree !== true || kind !== 'read')) {
    return fail(`"tree" must be true, and only on a read, got ${describeValue(tree)}`);
  }
  if (call !== undefined && (typeof call !== 'string' || call === '' || call.length > CALL_CHARS)) {
    return fail(`"call" must be a string of 1 to ${CALL_CHARS} characters`);
  }
  // Shown to reviewers, never judged; its text is never quoted back (it may hold a secret).
  if (command !== undefined && (typeof command !== 'string' || command === ''))
    return fail(
      `"command" must be a non-empty string (the command line), got ${describeValue(command)}`,
    );
  if (command !== undefined && kind !== 'command')
    return fail(
      `"command" is only for kind "command" (the command line it runs), not ${JSON.stringify(kind)}`,
    );
  // A failure report sets the trajectory marks that ask `failed` (guard/sequences.ts).
  return {
    kind,
    target,
    ...(method === undefined ? {} : { method }),
    ...(failed === true ? { failed } : {}),
    ...(tree === true ? { tree } : {}),
    ...(call === undefined ? {} : { call: call as string }),
    ...(command === undefined ? {} : { command: command as string }),
  };
}

/**
 * A recorded path event is judged as it was resolved when it was decided (`resolved`, `alias`),
 * not as the file system reads now: a link swapped since cannot change the verdict. A line
 * without `resolved` (older journals, hand-written lines) is resolved again.
 */
function withReadings(input: EventInput, fields: Record<string, unknown>): EventInput {
  const { resolved, alias } = fields;
  if (!PATH_KINDS.has(input.kind) || resolved === undefined) return input;
  for (const [name, v] of Object.entries({ resolved, alias })) {
    if (v !== undefined && v !== null && !(typeof v === 'string' && isAbsolute(v)))
      fail(`"${name}" must be an absolute path or null, got ${describeValue(v)}`);
  }
  const path = resolved as string | null;
  const other = (alias as string | undefined) ?? null;
  // Which names are hard-linked is read now: a record keeps paths, not file identities.
  return { ...input, readings: { path, alias: other, inodes: linked(path, other) } };
}

/** A record's sentinel out of place is judged again as one (its pause is rebuilt by replay). */
function withCredentials(input: EventInput, fields: Record<string, unknown>): EventInput {
  const { exfiltration, credentials } = fields;
  if (credentials !== undefined && !(Array.isArray(credentials) && credentials.every(isText)))
    fail(`"credentials" must be an array of credential names, got ${describeValue(credentials)}`);
  const used = credentials === undefined ? {} : { credentials: credentials as string[] };
  if (exfiltration === undefined) return { ...input, ...used };
  const { credential, where } = (exfiltration ?? {}) as Record<string, unknown>;
  if (!isText(credential) || !isText(where))
    fail('"exfiltration" must be {"credential": NAME, "where": TEXT}');
  return {
    ...input,
    ...used,
    exfiltration: { credential, where } as { credential: string; where: string },
  };
}

/** A record of a session shown a changed tool list pauses again on replay. */
function withToolChange(input: EventInput, fields: Record<string, unknown>): EventInput {
  const { toolChange } = fields;
  if (toolChange === undefined) return input;
  const { server, digest } = (toolChange ?? {}) as Record<string, unknown>;
  if (!isText(server) || !isText(digest))
    fail('"toolChange" must be {"server": NAME, "digest": HEX}');
  return { ...input, toolChange: { server, digest } as { server: string; digest: string } };
}

const isText = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** A value as an error message shows what was found: its type, and short scalars themselves. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value);
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}
