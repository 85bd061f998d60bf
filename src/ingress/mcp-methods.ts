import { pathToFileURL } from 'node:url';
import { TrajgateError } from '../errors.js';
import type { ToolTarget } from '../event/tool-map.js';

/**
 * Methods that are MCP's own protocol: they reach no file, prompt or tool of the server, so they
 * are no boundary event (while the session is paused they are held all the same). Every other
 * method, one trajgate does not know included, is judged.
 */
const PROTOCOL = new Set([
  'initialize',
  'ping',
  'tools/list',
  'resources/list',
  'resources/templates/list',
  'resources/unsubscribe',
  'prompts/list',
  'logging/setLevel',
  // A task's status and result belong to the tools/call that started it, judged then.
  'tasks/get',
  'tasks/list',
  'tasks/result',
  'tasks/cancel',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
]);

export const isProtocolMethod = (method: string): boolean => PROTOCOL.has(method);

/**
 * The targets of a judged method other than tools/call. `resources/read` and
 * `resources/subscribe` of a `file:` URI are a read of its path, written back into the message
 * as the `file:` URI of the path judged; any other URI, `prompts/get`, `completion/complete` and
 * every method trajgate does not know are a `tool` event, counted as unmapped tools are. Throws
 * E_EVENT_INVALID for params the method cannot be judged by, E_PATH_REFUSED for a `file:` URI
 * servers read differently.
 */
export function methodTargets(method: string, params: object): ToolTarget[] {
  if (!KNOWN.has(method)) return [opaque(method)];
  if (Array.isArray(params)) {
    throw new TrajgateError('E_EVENT_INVALID', `${method} needs params as an object, not an array`);
  }
  return knownTargets(method, params as Record<string, unknown>);
}

const KNOWN = new Set([
  'resources/read',
  'resources/subscribe',
  'prompts/get',
  'completion/complete',
]);

function knownTargets(method: string, params: Record<string, unknown>): ToolTarget[] {
  switch (method) {
    case 'resources/read':
    case 'resources/subscribe': {
      const uri = text(method, params, 'uri');
      const path = fileUriPath(uri);
      if (path === null) return [opaque(`${method} ${uri}`)];
      const set = (p: string) => void (params.uri = pathToFileURL(p).href);
      return [{ kind: 'read', target: path, set }];
    }
    case 'prompts/get':
      return [opaque(`${method} ${text(method, params, 'name')}`)];
    default:
      return [opaque(`${method} ${completionRef(params.ref)}`)];
  }
}

const opaque = (target: string): ToolTarget => ({ kind: 'tool', target, set: () => undefined });

function text(method: string, params: Record<string, unknown>, key: string): string {
  const value = params[key];
  if (typeof value === 'string' && value !== '') return value;
  throw new TrajgateError('E_EVENT_INVALID', `${method} needs a non-empty string "${key}"`);
}

/** `completion/complete`'s `ref`: the prompt or resource template completed for. */
function completionRef(ref: unknown): string {
  const r = (typeof ref === 'object' && ref !== null ? ref : {}) as Record<string, unknown>;
  if (r.type === 'ref/prompt') return `prompt ${text('completion/complete', r, 'name')}`;
  if (r.type === 'ref/resource') return `resource ${text('completion/complete', r, 'uri')}`;
  throw new TrajgateError(
    'E_EVENT_INVALID',
    'completion/complete needs a "ref" of type ref/prompt (with "name") or ref/resource (with "uri")',
  );
}

/**
 * The path a `file:` URI names (scheme in any case), or null for another scheme. Refused
 * (E_PATH_REFUSED) where readers disagree: a host other than localhost (a share elsewhere, or
 * ignored), no absolute path, a query or fragment, `\` (the WHATWG parser reads it as `/`),
 * tabs, newlines or other controls (WHATWG drops them), an encoded `/`, `\` or NUL, and
 * escapes that are not UTF-8. The path is judged as the system resolves it (links, then `..`).
 */
export function fileUriPath(uri: string): string | null {
  if (!/^file:/i.test(uri)) return null;
  const refuse = (why: string) =>
    new TrajgateError('E_PATH_REFUSED', `URI ${JSON.stringify(uri.slice(0, 200))} ${why}`);
  const rest = uri.slice(5);
  if (/[\\?#]|[\u0000-\u0020\u007f]/u.test(rest)) {
    throw refuse('has a character file: URI readers differ on (\\, ?, #, a space or a control)');
  }
  const m = /^\/\/([^/]*)(\/.*)$/s.exec(rest) ?? /^()(\/(?!\/).*)$/s.exec(rest);
  if (m === null) throw refuse('does not name an absolute path (file:///path)');
  const host = (m[1] as string).toLowerCase();
  if (host !== '' && host !== 'localhost') throw refuse(`names the host ${host}, not this one`);
  const encoded = m[2] as string;
  if (/%(2f|5c|00)/i.test(encoded)) throw refuse('has an encoded /, \\ or NUL');
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw refuse('has a percent escape that is not UTF-8');
  }
}
