import type { IncomingMessage } from 'node:http';

/** A request body larger than the limit: answered 413 without reading further. */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`request body is larger than ${limit} bytes`);
  }
}

/** Reads a whole request body, refusing past `limit` (before reading, when Content-Length says so). */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > limit) throw new BodyTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
