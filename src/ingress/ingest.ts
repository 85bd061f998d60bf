import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { isTrajgateError, TrajgateError } from '../errors.js';
import type { EventInput } from '../event/event.js';
import { validateEventInput } from '../event/validate.js';
import { sendJson } from '../review/http-json.js';
import { BodyTooLarge, readBody } from './body.js';
import type { BridgeContext } from './bridge-calls.js';
import { callOutcome, judgeCall } from './bridge-calls.js';
import { presence } from './context.js';

const INGEST_LIMIT = 64 * 1024;

/**
 * `POST /events {"kind","target"}`: a runner (a shell hook, a Claude Code PreToolUse hook) puts
 * its own actions into the agent's trajectory and gets the decision back as JSON. A paused
 * session holds the answer like any request.
 */
export async function handleIngest(
  ctx: BridgeContext,
  req: IncomingMessage,
  res: ServerResponse,
  who: { session: string; client: string },
): Promise<void> {
  const start = performance.now();
  let input: EventInput;
  try {
    input = parseEvent(await readBody(req, INGEST_LIMIT), ctx.config.kinds);
  } catch (err) {
    if (!isTrajgateError(err) && !(err instanceof BodyTooLarge)) throw err;
    const status = err instanceof BodyTooLarge ? 413 : 400;
    ctx.pipeline.refusal(
      { source: 'ingest', client: who.client, session: who.session },
      status,
      err.message,
    );
    return sendJson(res, status, {
      error: { code: status === 413 ? 'E_TOO_LARGE' : 'E_EVENT_INVALID', message: err.message },
    });
  }
  const ruling = await judgeCall(ctx.pipeline, [input], {
    ...who,
    source: 'ingest',
    waiting: presence(req.socket),
    what: (e) => `${e.kind} ${e.target}`,
  });
  if (ruling.gone)
    return callOutcome(
      ctx.pipeline,
      ruling.rids,
      who.session,
      { status: null, bytesUp: 0, bytesDown: 0, error: 'client closed while held' },
      start,
    );
  const d = ruling.decision;
  const answer = {
    verdict: d?.verdict ?? 'REVIEW',
    boundary: d?.boundary ?? null,
    count: d?.count ?? 0,
    reason: d?.reason ?? ruling.refusal?.reason ?? 'refused',
    ...(ruling.allowed ? {} : { message: ruling.refusal?.body ?? '' }),
  };
  sendJson(res, 200, answer);
  callOutcome(
    ctx.pipeline,
    ruling.rids,
    who.session,
    { status: 200, bytesUp: 0, bytesDown: 0 },
    start,
  );
}

function parseEvent(body: Buffer, kinds: ReadonlySet<string>): EventInput {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new TrajgateError(
      'E_EVENT_INVALID',
      `body is not valid JSON (${(err as Error).message})`,
    );
  }
  return validateEventInput(value, kinds);
}
