import type { IncomingMessage } from 'node:http';

/** A request body larger than the limit: answered 413 without reading further. */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`request body is larger than ${limit} bytes`);
  }
}

/**
 * Reads a whole request body, refusing past `limit` (before reading, when Content-Length says
 * so). On refusal the request is paused, not destroyed, so its socket can still carry the 413.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > limit)
    return Promise.reject(new BodyTooLarge(limit));
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
      reject(new BodyTooLarge(limit));
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}
