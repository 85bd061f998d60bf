import type { AgentAnswer, AnsweredRequest } from '../http/agent-message.js';
import type { HttpRefusal } from './refusal.js';

/**
 * A gRPC call: HTTP/2 with `application/grpc` or `application/grpc+proto` (…`;params`), as
 * PROTOCOL-HTTP2.md (grpc/grpc) names it. gRPC-Web (`application/grpc-web`) is not one: it
 * carries its status in the body, over HTTP/1.1 too.
 */
export function isGrpcCall(req: AnsweredRequest): boolean {
  const type = req.headers['content-type'];
  return (
    req.httpVersionMajor === 2 && type !== undefined && /^application\/grpc(?:[+;]|$)/i.test(type)
  );
}

/** `grpc-status` in a flat field list, as a number; undefined when absent or not a number. */
export function grpcStatus(fields: readonly string[]): number | undefined {
  for (let i = 0; i < fields.length; i += 2) {
    if ((fields[i] as string).toLowerCase() !== 'grpc-status') continue;
    const value = fields[i + 1] as string;
    return /^\d{1,3}$/.test(value) ? Number(value) : undefined;
  }
  return undefined;
}

/**
 * The gRPC code of an HTTP status, as grpc/grpc's doc/http-grpc-status-mapping.md maps it
 * (what a client would make of the status alone): 7 PERMISSION_DENIED for a verdict's 403.
 */
function grpcCode(status: number): number {
  const codes: Record<number, number> = { 400: 13, 401: 16, 403: 7, 404: 12 };
  return codes[status] ?? ([429, 502, 503, 504].includes(status) ? 14 : 2);
}

/** Encoded `grpc-message` bytes kept: grpc-js refuses metadata over 8 KiB by default. */
const MESSAGE_BYTES = 4096;

/**
 * PROTOCOL-HTTP2.md's Percent-Encoded: UTF-8, every byte but space and VCHAR other than `%`
 * as `%XX` (the text's newlines too). Cut at MESSAGE_BYTES, at a character.
 */
function grpcMessage(text: string): string {
  let out = '';
  for (const char of text.trimEnd()) {
    const code = char.charCodeAt(0);
    const piece =
      char.length === 1 && code >= 0x20 && code <= 0x7e && char !== '%'
        ? char
        : [...Buffer.from(char)]
            .map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`)
            .join('');
    if (out.length + piece.length > MESSAGE_BYTES) break;
    out += piece;
  }
  return out;
}

/**
 * A refusal of a gRPC call, as gRPC: HTTP status 200 and the call's status in `grpc-status`
 * and `grpc-message` (the refusal's text), which clients read only then (grpc-go takes any
 * other HTTP status as the whole answer, grpc-js too once a body follows). Before the answer
 * began it is Trailers-Only, one HEADERS frame ending the stream; after, it ends the answer
 * under way as its trailers.
 */
export function sendGrpcRefusal(res: AgentAnswer, refusal: HttpRefusal): void {
  if (res.writableEnded || res.destroyed) return;
  const status = {
    'grpc-status': String(grpcCode(refusal.status)),
    'grpc-message': grpcMessage(refusal.body),
  };
  if (res.headersSent) {
    res.addTrailers(status);
    res.end();
    return;
  }
  res.statusCode = 200;
  for (const [name, value] of Object.entries({
    ...refusal.headers,
    'content-type': 'application/grpc',
    ...status,
  }))
    res.setHeader(name, value);
  res.end();
}
