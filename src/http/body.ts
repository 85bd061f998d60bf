import type { IncomingHttpHeaders } from 'node:http';
import type { AgentRequest } from '../http/agent-message.js';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import type { ErrorCode } from '../errors.js';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { parseStrictJson } from './strict-json.js';

/** A request body larger than the limit: answered 413 without reading further. */
const tooLarge = (limit: number) =>
  new TrajgateError('E_TOO_LARGE', `request body is larger than ${limit} bytes`);

/**
 * Whether `err` is readBody's or readJson's refusal of a body, answered with its status: 413
 * past the limit, 415 for how it is sent, 400 for what it holds.
 */
export function isBodyRefusal(err: unknown): err is TrajgateError {
  return isTrajgateError(err) && BODY_REFUSALS.has(err.code);
}

const BODY_REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'E_TOO_LARGE',
  'E_BODY_UNSUPPORTED',
  'E_EVENT_INVALID',
]);

type Decoder = (body: Buffer, options: { maxOutputLength: number }) => Promise<Buffer>;
const DECODERS: Readonly<Record<string, Decoder>> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a whole request body, refusing past `limit` (before reading, when Content-Length says
 * so). On refusal the request is paused, not destroyed, so its socket can still carry the 413.
 */
export function readBody(req: AgentRequest, limit: number): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.pause();
      reject(tooLarge(limit));
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * A JSON body, read the one way trajgate forwards it: UTF-8 only (another declared charset is
 * 415: a body parser honouring `charset=utf-7` would read other characters), Content-Encoding
 * gzip, deflate or br decoded first with `limit` applying to the decoded size too (other codings
 * 415), invalid UTF-8 and duplicate keys 400. An empty body is undefined when `empty` allows it.
 */
export async function readJson(
  req: AgentRequest,
  limit: number,
  options: { empty?: boolean } = {},
): Promise<unknown> {
  const codings = contentCodings(req.headers);
  let body = await readBody(req, limit);
  for (const coding of codings.reverse()) body = await decode(coding, body, limit);
  if (body.length === 0) {
    if (options.empty) return undefined;
    throw new TrajgateError('E_EVENT_INVALID', 'the body is empty; expected JSON');
  }
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    throw new TrajgateError('E_EVENT_INVALID', 'the body is not valid UTF-8');
  }
  return parseStrictJson(text);
}

/** The codings to undo, in the order applied; refuses a charset or coding it cannot read. */
function contentCodings(headers: IncomingHttpHeaders): string[] {
  for (const [, quoted, bare] of (headers['content-type'] ?? '').matchAll(CHARSET)) {
    const charset = (quoted ?? bare ?? '').toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8')
      throw unsupported(`charset ${JSON.stringify(charset)}: JSON is read as UTF-8 only`);
  }
  const te = list(headers['transfer-encoding']).filter((t) => t !== 'chunked');
  if (te.length > 0) throw unsupported(`Transfer-Encoding ${te.join(', ')} (only chunked)`);
  const codings = list(headers['content-encoding']).filter((c) => c !== 'identity');
  const unknown = codings.find((c) => !Object.hasOwn(DECODERS, c));
  if (unknown !== undefined)
    throw unsupported(`Content-Encoding ${JSON.stringify(unknown)} (gzip, deflate or br)`);
  return codings;
}

const CHARSET = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/gi;

function list(value: string | string[] | undefined): string[] {
  return [value ?? []]
    .flat()
    .flatMap((v) => v.split(','))
    .map((v) => v.trim().toLowerCase())
    .filter((v) => v !== '');
}

async function decode(coding: string, body: Buffer, limit: number): Promise<Buffer> {
  try {
    return await (DECODERS[coding] as Decoder)(body, { maxOutputLength: limit });
  } catch (err) {
    // Checked while inflating: a small bomb stops at the limit, it is never inflated whole.
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(limit);
    throw new TrajgateError('E_EVENT_INVALID', `the body is not valid ${coding} data`);
  }
}

function unsupported(what: string): TrajgateError {
  return new TrajgateError('E_BODY_UNSUPPORTED', `unsupported body: ${what}`);
}
