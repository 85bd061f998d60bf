import type { IncomingMessage, ServerResponse } from 'node:http';
import { TrajgateError } from '../errors.js';
import { readBody } from './body.js';

export const BODY_LIMIT = 64 * 1024;

/** A JSON body already serialised (journal lines as written, a cached answer): sent as is. */
export class RawJson {
  constructor(readonly bytes: Buffer) {}
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = value instanceof RawJson ? value.bytes : JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

/**
 * An error as clients see it: `{"error":{"code","message","details"?}}`, with the error's HTTP
 * status unless the caller knows better (500 for a code never answered over HTTP).
 */
export function sendError(
  res: ServerResponse,
  err: TrajgateError,
  status = err.status ?? 500,
): void {
  const { code, message, details } = err;
  sendJson(res, status, {
    error: { code, message, ...(details.length ? { details } : {}) },
  });
}

/**
 * The request's JSON object body (`{}` when empty), refused with 413 past BODY_LIMIT (before
 * reading it when Content-Length says so) and 400 when it is not a JSON object.
 */
export async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const text = (await readBody(req, BODY_LIMIT)).toString('utf8').trim();
  if (text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new TrajgateError('E_BAD_JSON', `body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TrajgateError('E_BAD_JSON', 'body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
