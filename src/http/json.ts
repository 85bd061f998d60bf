import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyTooLarge, readBody } from './body.js';

/** An API error as clients see it: HTTP status, stable code, one-line message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Individual problems, each naming its place (a config file's line and key). */
    readonly details: readonly string[] = [],
  ) {
    super(message);
  }
}

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

export function sendError(res: ServerResponse, err: ApiError): void {
  const { code, message, details } = err;
  sendJson(res, err.status, { error: { code, message, ...(details.length ? { details } : {}) } });
}

/**
 * The request's JSON object body (`{}` when empty), refused with 413 past BODY_LIMIT (before
 * reading it when Content-Length says so) and 400 when it is not a JSON object.
 */
export async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  let body: Buffer;
  try {
    body = await readBody(req, BODY_LIMIT);
  } catch (err) {
    if (err instanceof BodyTooLarge) throw new ApiError(413, 'E_TOO_LARGE', err.message);
    throw err;
  }
  const text = body.toString('utf8').trim();
  if (text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ApiError(400, 'E_BAD_JSON', `body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ApiError(400, 'E_BAD_JSON', 'body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
