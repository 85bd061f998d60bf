import { IncomingMessage } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { MAX_FIELDS } from './request-parser.js';

type AddHeaderLine = (this: object, name: string, value: string, dest: object) => void;

/**
 * Node's own rule for folding a field into `req.headers` (lib/_http_incoming.js): names
 * lower-cased; for Host, Content-Length, Authorization and the other single-valued fields the
 * first one kept; `set-cookie` an array; `cookie` joined with "; "; every other repeat joined
 * with ", ". Borrowed rather than rewritten so the two engines can never read a head apart: it
 * reads only `joinDuplicateHeaders` from its `this`, never the stream.
 */
const addHeaderLine = (IncomingMessage.prototype as unknown as { _addHeaderLine: AddHeaderLine })
  ._addHeaderLine;
const NODE_DEFAULTS = { joinDuplicateHeaders: false };

/**
 * The `headers` object `node:http` builds from `rawHeaders`, built the same way: at most
 * MAX_FIELDS fields, as node:http keeps (the lean parser refuses a head with more).
 */
export function headerObject(rawHeaders: readonly string[]): IncomingHttpHeaders {
  const dest: IncomingHttpHeaders = {};
  const end = Math.min(rawHeaders.length, 2 * MAX_FIELDS);
  for (let i = 0; i + 1 < end; i += 2)
    addHeaderLine.call(NODE_DEFAULTS, rawHeaders[i] as string, rawHeaders[i + 1] as string, dest);
  return dest;
}
