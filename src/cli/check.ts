import type { ClientRequest, IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { addAbortSignal } from 'node:stream';
import { parseArgs } from 'node:util';
import { DEFAULT_LISTEN, parseDuration } from '../config/formats.js';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { argsError } from './args-error.js';
import { claudeCodeAction } from './claude-code.js';
import { answerError, judged, recorded } from './check-answer.js';

/** What the hook convention reads: 0 lets the action run, 2 blocks it with stderr as the reason. */
const ALLOWED = 0;
const REFUSED = 2;
const DEFAULT_TIMEOUT = '50s';
/** A hook input carries the tool's whole response (a file read, a command's output). */
const HOOK_INPUT_LIMIT = 32 * 1024 * 1024;

export interface CheckIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly stdin: (signal: AbortSignal) => Promise<string>;
  /**
   * What a hook rarely needs, loaded only then (a hook runs on every tool call): check's usage
   * line, for a usage error; the bridge's `host:port` from a config file (its YAML and schema),
   * read as operator commands read it (the agent's shell holds its own token at most).
   */
  readonly usage: () => Promise<string>;
  readonly bridgeOf: (configFile: string) => Promise<string>;
}

/** One request to the bridge; its route says how the answer is read. */
interface Ask {
  readonly path: '/events' | '/events/result';
  readonly body: object;
  /** The action in words, for the refusal line. */
  readonly what: string;
}

/**
 * Asks the bridge's ingest route whether an action may happen, for runner hooks (Claude Code's
 * PreToolUse convention). Fails closed: anything but a well-formed ALLOW exits 2, never 1, and
 * `--timeout` bounds the whole run, reading the hook input included.
 */
export async function check(argv: string[], io: CheckIo): Promise<number> {
  const deadline = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let ask: Ask | null = null;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        kind: { type: 'string' },
        target: { type: 'string' },
        hook: { type: 'string' },
        bridge: { type: 'string' },
        config: { type: 'string' },
        timeout: { type: 'string' },
      },
    });
    const flags = [values.kind, values.target].filter((v) => v !== undefined).length;
    if (positionals.length > 0 || flags === 1 || (flags === 2) === (values.hook !== undefined))
      throw new TrajgateError('E_USAGE', `usage: ${await io.usage()}`);
    if (values.hook !== undefined && values.hook !== 'claude-code')
      throw new TrajgateError('E_USAGE', `unknown --hook ${values.hook} (known: claude-code)`);
    const timeout = values.timeout ?? DEFAULT_TIMEOUT;
    const ms = parseDuration(/^\d+(\.\d+)?$/.test(timeout) ? `${timeout}s` : timeout);
    if (ms === undefined || ms <= 0)
      throw new TrajgateError('E_USAGE', `--timeout ${timeout} is not a positive duration (50s)`);
    timer = setTimeout(() => deadline.abort(), ms);

    if (flags === 2) {
      const event = { kind: values.kind as string, target: values.target as string };
      ask = { path: '/events', body: event, what: `${event.kind} ${event.target}` };
    } else {
      const action = claudeCodeAction(await hookInput(io, deadline.signal, timeout));
      if (action.type === 'none') return ALLOWED;
      const e = action.type === 'judge' ? action.event : action.result;
      const path = action.type === 'judge' ? '/events' : '/events/result';
      ask = { path, body: e, what: `${e.kind} ${e.target}` };
    }
    const base = await bridgeUrl(values.bridge, values.config, io);
    const { status, text } = await post(base, ask, deadline.signal).catch((err: unknown) => {
      if (!deadline.signal.aborted) throw err;
      throw new TrajgateError(
        'E_TIMEOUT',
        `no answer within ${timeout} (a paused session is held until an operator decides)`,
      );
    });
    if (ask.path === '/events/result') {
      recorded(status, text);
      return ALLOWED;
    }
    const refusal = judged(status, text);
    if (refusal === null) return ALLOWED;
    io.err(refusal);
    return REFUSED;
  } catch (err) {
    const why = oneLine(await reasonOf(err, io));
    // A PostToolUse exit 2 shows stderr to the model but cannot undo the call: it is told that
    // its trajectory lost a record, as every failure here is a 2 (1 would read as "fine").
    io.err(
      ask?.path === '/events/result'
        ? `trajgate: cannot record the result of ${ask.what}: ${why} (the call already ran)`
        : `trajgate: ${why}; refusing ${ask?.what ?? 'the action'}`,
    );
    return REFUSED;
  } finally {
    clearTimeout(timer);
  }
}

async function hookInput(io: CheckIo, signal: AbortSignal, timeout: string): Promise<string> {
  try {
    return await io.stdin(signal);
  } catch (err) {
    if (signal.aborted)
      throw new TrajgateError('E_TIMEOUT', `no hook input on stdin within ${timeout}`);
    if (isTrajgateError(err)) throw err;
    throw new TrajgateError('E_INPUT_READ', `cannot read the hook input on stdin (${msg(err)})`);
  }
}

/** The bridge to ask: --bridge, $TRAJGATE_BRIDGE, or listen.bridge of the config. */
async function bridgeUrl(
  flag: string | undefined,
  configFile: string | undefined,
  io: CheckIo,
): Promise<URL> {
  const listen = configFile === undefined ? DEFAULT_LISTEN.bridge : await io.bridgeOf(configFile);
  const text = flag || process.env.TRAJGATE_BRIDGE || `http://${listen}`;
  const url = URL.canParse(text) ? new URL(text) : null;
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new TrajgateError('E_USAGE', `bridge ${JSON.stringify(text)} is not an http(s) URL`);
  return url;
}

/**
 * POSTs the ask with node:http(s), one connection that closes after it; no timeout of its own:
 * the deadline's signal bounds it all.
 */
async function post(
  base: URL,
  ask: Ask,
  signal: AbortSignal,
): Promise<{ status: number; text: string }> {
  const token = process.env.TRAJGATE_AGENT_TOKEN;
  const where = base.href.replace(/\/$/, '');
  const body = JSON.stringify(ask.body);
  const request = base.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
  let req: ClientRequest | undefined;
  try {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      req = request(new URL(ask.path, base), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        agent: false,
        signal,
      });
      req.once('response', resolve).once('error', reject).end(body);
    });
    return { status: res.statusCode ?? 0, text: await answerText(res) };
  } catch (err) {
    if (signal.aborted || isTrajgateError(err)) throw err;
    throw answerError(`cannot reach the gateway at ${where} (${msg(err)})`);
  } finally {
    // An answer left unread (past 1 MiB) would keep the connection, and the process, alive.
    req?.destroy();
  }
}

/** Reads the answer; past a megabyte it is no answer of the gateway's. */
async function answerText(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > 1024 * 1024) throw answerError('the gateway answered more than 1 MiB');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Standard input, whole, as UTF-8 (a hook input is JSON), until the signal aborts it. */
export async function readStdin(signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of addAbortSignal(signal, process.stdin) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > HOOK_INPUT_LIMIT)
      throw new TrajgateError('E_INPUT_READ', `hook input on stdin is larger than 32 MiB`);
    chunks.push(chunk);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new TrajgateError('E_INPUT_READ', 'hook input on stdin is not UTF-8');
  }
}

async function reasonOf(err: unknown, io: CheckIo): Promise<string> {
  if (isTrajgateError(err)) return [err.message, ...err.details].join('; ');
  const wrong = argsError(err);
  if (wrong !== null) return `${wrong} (usage: ${await io.usage()})`;
  return `internal error: ${msg(err)}`;
}

const msg = (err: unknown): string => (err instanceof Error ? err.message : String(err));
const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ');
