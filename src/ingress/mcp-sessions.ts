import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Watcher } from '../action/reverse-proxy.js';

const HEADER = 'mcp-session-id';
/** 128 bits of HMAC-SHA256 in base64url: no `.`, so the tag is what follows the last one. */
const TAG_CHARS = 22;
/** Derives the tagging key from the link key: tags are never a decision link's signature. */
const PURPOSE = 'trajgate mcp-session-id v1';

/**
 * An MCP session belongs to the agent that opened it. The `Mcp-Session-Id` a server answers
 * with reaches the agent as `ID.TAG`, TAG an HMAC of the agent and ID under a key derived from
 * the link key; a request's id is forwarded (as ID) only when its tag is the sending agent's.
 * So another agent's id, or one the server never gave through trajgate, is refused without
 * anything kept per session (memory stays flat however many sessions open), and a restart, or
 * another replica with the same link key, keeps every agent's sessions (the binding is the id).
 */
export class McpSessions {
  constructor(private readonly key: () => Buffer) {}

  /** The id `owner` is given for the server's `id`. */
  issue(owner: string, id: string): string {
    return `${id}.${this.#tag(owner, id)}`;
  }

  /** The server's id behind `sent`, or null when it was not issued to `owner`. */
  open(owner: string, sent: string): string | null {
    const dot = sent.lastIndexOf('.');
    if (dot <= 0) return null;
    const id = sent.slice(0, dot);
    const given = Buffer.from(sent.slice(dot + 1));
    const expected = Buffer.from(this.#tag(owner, id));
    return given.length === expected.length && timingSafeEqual(given, expected) ? id : null;
  }

  /**
   * Checks a request's `Mcp-Session-Id` for `owner` and puts the server's id in its place.
   * Returns why it is refused (400: sent twice, 404: not this agent's), or null (none sent, or
   * this agent's).
   */
  claim(req: IncomingMessage, owner: string): { status: 400 | 404; reason: string } | null {
    let count = 0;
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      if ((req.rawHeaders[i] as string).toLowerCase() === HEADER) count++;
    if (count === 0) return null;
    if (count > 1) return { status: 400, reason: 'more than one Mcp-Session-Id header' };
    const id = this.open(owner, req.headers[HEADER] as string);
    if (id === null) {
      const reason = `the Mcp-Session-Id was not opened by ${owner} through trajgate (a session belongs to the agent that initialized it); send initialize without it for a new session`;
      return { status: 404, reason };
    }
    req.headers[HEADER] = id;
    return null;
  }

  /**
   * A watcher that hands the server's `Mcp-Session-Id`, on any answer, to `owner` tagged
   * (before the answer's headers are written), then reads the answer as `inner` does.
   */
  issuing(owner: string, inner?: Watcher): Watcher {
    return (answer) => {
      const id = answer.headers[HEADER];
      if (typeof id === 'string' && id !== '') answer.headers[HEADER] = this.issue(owner, id);
      return inner?.(answer) ?? { chunk: () => undefined, end: () => false };
    };
  }

  #tag(owner: string, id: string): string {
    const key = createHmac('sha256', this.key()).update(PURPOSE).digest();
    return createHmac('sha256', key)
      .update(`${owner.length}:${owner}\n${id}`)
      .digest('base64url')
      .slice(0, TAG_CHARS);
  }
}
