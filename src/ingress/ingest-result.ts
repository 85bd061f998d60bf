import { isTrajgateError, TrajgateError } from '../errors.js';
import { redactCommand } from '../event/command-line.js';
import { describeValue, validateEventInput } from '../event/validate.js';
import type { ResultRecord, Unstamped } from '../journal/records.js';
import { sendError, sendJson } from '../http/json.js';
import type { BridgeContext, BridgeRequest } from './bridge-calls.js';
import { ingestBody } from './ingest.js';

type Report = Omit<Unstamped<ResultRecord>, 'type' | 'session' | 'rid' | 'unlinked'>;

/** What a runner may report; anything else (`approved`, a verdict) is refused. */
const FIELDS: ReadonlySet<string> = new Set([
  'kind',
  'target',
  'command',
  'ok',
  'error',
  'tool',
  'call',
]);
/** An error text is kept to this length: a failed command's whole output is not a record. */
const ERROR_CHARS = 1024;
const NAME_CHARS = 256;

/**
 * `POST /events/result {"kind","target","command"?,"ok","error"?,"tool"?,"call"?}`: a runner
 * reports how a call it asked about through `POST /events` ended (a Claude Code PostToolUse
 * hook), naming it as the call's event did (`command` only with kind `command`). Journaled
 * as a `result` record linked by `call` to the event asked with that id, never by kind and
 * target. A result no call of the session is known for (no id, an id never asked, one already
 * reported or forgotten) is journaled with `unlinked` and counts as a failure of the session:
 * what failed cannot be known, so the rules that wait for failures are marked. It decides
 * nothing, so it is answered at once, paused session or not: `{"recorded": SEQ, "rid":
 * REQUEST_ID | null, "ref": the same}` (`ref`, the old name, goes in the next minor version),
 * or 503 when the journal cannot be written (the record is lost).
 */
export async function handleResult(
  ctx: BridgeContext,
  { req, res, who }: BridgeRequest,
): Promise<void> {
  const report = await ingestBody(ctx, req, res, who, (body) =>
    parseReport(body, ctx.config.kinds),
  );
  if (report === null) return;
  const taken = report.call === undefined ? undefined : ctx.calls.take(who.session, report.call);
  const rid = taken ?? null;
  const unlinked =
    taken !== undefined
      ? undefined
      : report.call === undefined
        ? 'no "call": the result names no call'
        : `no call ${JSON.stringify(report.call)} is waiting for its result in this session`;
  let seq: number;
  try {
    seq = ctx.pipeline.result({ type: 'result', session: who.session, rid, ...report, unlinked });
  } catch (err) {
    if (!isTrajgateError(err)) throw err;
    const lost = new TrajgateError(err.code, `the result was not recorded: ${err.message}`);
    return sendError(res, lost, 503);
  }
  sendJson(res, 200, { recorded: seq, rid, ref: rid });
}

function parseReport(body: Buffer, kinds: ReadonlySet<string>): Report {
  const fail = (what: string): never => {
    throw new TrajgateError('E_EVENT_INVALID', what);
  };
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return fail(`body is not valid JSON (${(err as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail('expected a JSON object with "kind", "target" and "ok"');
  const fields = value as Record<string, unknown>;
  const unknown = Object.keys(fields).find((k) => !FIELDS.has(k));
  if (unknown !== undefined) return fail(`unknown field ${JSON.stringify(unknown)} in a result`);
  const { kind, target, command } = validateEventInput(
    { kind: fields.kind, target: fields.target, command: fields.command },
    kinds,
  );
  const { ok, error, tool, call } = fields;
  if (typeof ok !== 'boolean') return fail(`"ok" must be true or false, got ${describeValue(ok)}`);
  if (error !== undefined && (typeof error !== 'string' || ok))
    return fail(`"error" must be a string, and only with "ok": false; got ${describeValue(error)}`);
  for (const [name, v] of [
    ['tool', tool],
    ['call', call],
  ] as const) {
    if (v !== undefined && (typeof v !== 'string' || v === '' || v.length > NAME_CHARS))
      return fail(`"${name}" must be a string of 1 to ${NAME_CHARS} characters`);
  }
  return {
    kind,
    target,
    // Named as its call's event was, secrets redacted the same way.
    ...(command === undefined ? {} : { command: redactCommand(command) }),
    ok,
    ...(error === undefined
      ? {}
      : { error: error.length > ERROR_CHARS ? error.slice(0, ERROR_CHARS) + '…' : error }),
    ...(tool === undefined ? {} : { tool: tool as string }),
    ...(call === undefined ? {} : { call: call as string }),
  };
}
