import type { ServerResponse } from 'node:http';
import type { Flow } from '../action/flows.js';
import type { ReverseProxy, WholeAnswer } from '../action/reverse-proxy.js';
import type { Transfer } from '../action/transfer.js';
import { upstreamOutcome } from '../action/transfer.js';
import { HOP_BY_HOP } from '../http/hop-by-hop.js';
import type { BridgeContext, BridgeRequest } from './bridge-calls.js';
import type { JsonRpcId } from './mcp.js';
import { bridgeServer } from './tool-lists.js';
import { readToolList } from './tool-list-answer.js';

/** A tools/list answer may be this many times `bridge.maxBodyBytes`, as sent and decoded. */
export const TOOL_LIST_FACTOR = 8;

/** Fields about the bytes as the server sent them, untrue of the answer written in their place. */
const SENT_BYTES = [
  'content-length',
  'content-encoding',
  'content-md5',
  'digest',
  'content-digest',
  'repr-digest',
  'etag',
];

/** What a tools/list request came to: answered, or the failure its caller answers (journaled). */
export interface ListOutcome {
  readonly transfer: Transfer;
  readonly failure?: { readonly status: 502 | 503 | 504; readonly reason: string };
}

/**
 * A tools/list request through the bridge. Its answer is read whole (bounded), decoded, and
 * handed as the server sent it to the observer (what pins tool definitions) before anything
 * else; then the tools the agent may not call are taken out of it and the answer is written
 * again (identity-coded, its length set). An answer that cannot be read is refused: the
 * agent is never shown a list trajgate could not judge. `flow` freezes the answer while the
 * session is paused, and stays registered until it is delivered.
 */
export async function toolList(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  { req, res, who }: BridgeRequest,
  m: { readonly id: JsonRpcId; readonly body: Buffer | null },
  flow: Flow,
): Promise<ListOutcome> {
  const max = ctx.config.bridge.maxBodyBytes * TOOL_LIST_FACTOR;
  const bytesUp = m.body?.length ?? 0;
  const failed = (status: 502 | 503 | 504, reason: string): ListOutcome => ({
    transfer: { status, bytesUp, bytesDown: 0, error: reason, failed: true },
    failure: { status, reason },
  });
  const read = await proxy.read(req, res, m.body, max, ctx.sessions.issuing(who.session), flow);
  if (read.kind === 'gone')
    return { transfer: { status: null, bytesUp, bytesDown: 0, error: 'client closed first' } };
  if (read.kind === 'failure') return failed(read.failure.status, read.failure.reason);
  const { answer } = read;
  const list = readToolList(answer, m.id, max);
  if (list.kind === 'bad') return failed(502, `the server's tools/list answer ${list.reason}`);
  if (list.kind === 'pass') {
    const written = await write(res, answer, answer.body, null);
    return { transfer: upstreamOutcome({ status: answer.status, bytesUp, bytesDown: written }) };
  }
  const server = bridgeServer(ctx.config.bridge);
  const asked = JSON.parse(m.body?.toString() ?? '{}') as { params?: { cursor?: unknown } };
  const complete = asked.params?.cursor === undefined && !list.more;
  try {
    await ctx.toolLists.seen({ server, session: who.session, tools: list.tools, complete });
  } catch (err) {
    return failed(503, `the tools/list answer could not be recorded (${(err as Error).message})`);
  }
  // The policy as it is now: a reload while the answer was read applies to it.
  const policy = ctx.toolPolicy.current;
  const kept = list.tools.filter((t) => policy.refuses(who.session, server, t.name) === null);
  const { body, type } = list.render(kept);
  const written = await write(res, answer, body, type);
  return { transfer: upstreamOutcome({ status: answer.status, bytesUp, bytesDown: written }) };
}

/**
 * Writes the answer: the server's status and fields (Mcp-Session-Id already tagged), those
 * about its bytes replaced when `type` says the body is one written here. Resolves once it is
 * delivered (or the client left), with the bytes written.
 */
function write(
  res: ServerResponse,
  answer: WholeAnswer,
  body: Buffer,
  type: string | null,
): Promise<number> {
  const closed = new Promise<void>((resolve) => res.once('close', resolve));
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    if (type !== null && SENT_BYTES.includes(name)) continue;
    res.setHeader(name, value);
  }
  if (type !== null) {
    res.setHeader('content-type', type);
    res.setHeader('content-length', body.length);
  }
  res.writeHead(answer.status);
  res.end(body);
  return closed.then(() => body.length);
}
