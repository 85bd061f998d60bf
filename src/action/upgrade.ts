import type { IncomingMessage } from 'node:http';
import type { AgentHead } from '../http/agent-message.js';
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { pipeline } from 'node:stream/promises';
import type { Flow } from './flows.js';
import { downstreamRawHeaders, requestHeadLength, upstreamRequestHeaders } from './headers.js';
import { plainRefusal } from './refusal.js';
import { writeRawRefusal } from './respond.js';
import type { Transfer } from './transfer.js';
import { upstreamFailure } from './transfer.js';

/** An upgrade keeps Connection and Upgrade both ways: they are what it asks for (RFC 9110 § 7.8). */
const UPGRADE_FIELDS: ReadonlySet<string> = new Set(['connection', 'upgrade']);

/**
 * Methods Node's client sends unframed when no length is given. For any other it would add
 * `Transfer-Encoding: chunked` and an empty chunked body the agent never sent, so an explicit
 * `Content-Length: 0` says what the agent's request said.
 */
const UNFRAMED: ReadonlySet<string> = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE']);

/** How long a closed exchange still reads (and drops) what its client sends. */
const LINGER_MS = 2_000;

/** How the upstream answered an upgrade request. */
export type Answer =
  | {
      readonly kind: 'switched';
      /** The 101 head for the client, field bytes as they came. */
      readonly head: Buffer;
      readonly bytesUp: number;
    }
  | { readonly kind: 'answered'; readonly transfer: Transfer };

/**
 * Sends an upgrade request on `upstream` (connected to the checked address) and reads the
 * answer with Node's HTTP parser. The request goes as Node serialises it: origin-form, the
 * fields trajgate keeps, and a Content-Length body as exactly that many bytes read from
 * `client`; what the client sent beyond it stays unread. Only a `101` (RFC 9110 § 15.2.2)
 * makes the connection a tunnel: `upstream` is then the tunnel's, with any bytes that followed
 * the 101 put back unread. Any other final answer is an ordinary response, passed on
 * with `Connection: close`, and the connection then closes: a request pipelined behind the
 * upgrade is neither judged nor sent (RFC 9112 § 9.6: after `close` no further request is
 * processed; § 9.3.2: the client retries it on a new connection).
 */
export function sendUpgrade(
  client: Socket,
  req: AgentHead,
  url: URL,
  upstream: Socket,
  name: string,
  timeoutMs: number,
  flow?: Flow,
  drop?: string,
): Promise<Answer> {
  return new Promise((resolve) => {
    const method = req.method ?? 'GET';
    const length = req.headers['content-length'];
    const all = upstreamRequestHeaders(req.rawHeaders, url.host, UPGRADE_FIELDS);
    const headers = drop === undefined ? all : withoutField(all, drop);
    if (length === undefined && !UNFRAMED.has(method)) headers.push('content-length', '0');
    const path = url.pathname + url.search;
    const outgoing = request({ method, path, headers, createConnection: () => upstream });
    let left = Number(length ?? 0);
    // Counted as a request's are (volume rules): its head and body, then the tunnel's bytes.
    let bytesUp = requestHeadLength(method, path, headers);
    flow?.up(bytesUp);
    let decided = false;
    const decide = (): boolean => {
      if (decided) return false;
      decided = true;
      client.off('data', onData).off('end', onClientGone).off('close', onClientGone);
      return true;
    };
    const fail = (status: number, reason: string) => {
      if (!decide()) return;
      upstream.destroy();
      writeRawRefusal(client, plainRefusal(status, reason));
      linger(client);
      resolve({ kind: 'answered', transfer: { status, bytesUp, bytesDown: 0, error: reason } });
    };
    // Closed while the upstream has yet to answer: nothing it says reaches the agent.
    flow?.attach({
      freeze: () => undefined,
      thaw: () => undefined,
      close: (reason) =>
        fail(403, `trajgate closed this upgrade before it was answered: ${reason}`),
    });
    const onClientGone = () => {
      if (!decide()) return;
      upstream.destroy();
      client.destroy();
      const error = 'client closed before the upstream answered';
      resolve({ kind: 'answered', transfer: { status: null, bytesUp, bytesDown: 0, error } });
    };
    const onData = (chunk: Buffer) => {
      const body = chunk.subarray(0, left);
      left -= body.length;
      bytesUp += body.length;
      flow?.up(body.length);
      const more = outgoing.write(body);
      if (left > 0) {
        if (!more) client.pause();
        return;
      }
      client.off('data', onData).off('end', onClientGone).pause();
      if (body.length < chunk.length) client.unshift(chunk.subarray(body.length));
      outgoing.end();
    };
    outgoing.on('drain', () => {
      if (left > 0 && !decided) client.resume();
    });
    outgoing.setTimeout(timeoutMs, () =>
      outgoing.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })),
    );
    outgoing.on('error', (err) => {
      const failure = upstreamFailure(err, name);
      fail(failure.status, failure.reason);
    });
    // Node hands back `upstream` itself, as the tunnel's.
    outgoing.on('upgrade', (res: IncomingMessage, _upstream: Socket, early: Buffer) => {
      // The body comes before the new protocol (RFC 9110 § 7.8): one switched early would read
      // the rest of it as the new protocol's bytes.
      if (left > 0)
        return fail(502, `upstream ${name} switched protocols before the body was sent`);
      if (!decide()) return;
      upstream.setTimeout(0);
      if (early.length > 0) upstream.unshift(early);
      resolve({ kind: 'switched', head: switchingHead(res), bytesUp });
    });
    outgoing.on('response', (res: IncomingMessage) => {
      if (res.statusCode === 101) {
        return fail(
          502,
          `upstream ${name} switched protocols without naming one (RFC 9110 § 15.2.2)`,
        );
      }
      if (!decide()) return;
      void respond(client, res, name).then((answered) => {
        upstream.destroy();
        resolve({ kind: 'answered', transfer: { ...answered, bytesUp } });
      });
    });
    client.once('close', onClientGone);
    if (left === 0) {
      outgoing.end();
      return;
    }
    // The head goes now: Node would hold it back until the first body bytes.
    outgoing.flushHeaders();
    client.on('data', onData).once('end', onClientGone);
    client.resume();
  });
}

/** A final answer other than 101, as an ordinary response (body framed by the parser). */
async function respond(
  client: Socket,
  res: IncomingMessage,
  name: string,
): Promise<Omit<Transfer, 'bytesUp'>> {
  const status = res.statusCode as number;
  const fields = [...downstreamRawHeaders(res.rawHeaders), 'connection', 'close'];
  client.write(headBytes(`HTTP/1.1 ${status} ${res.statusMessage}`, fields));
  let bytesDown = 0;
  res.on('data', (chunk: Buffer) => (bytesDown += chunk.length));
  // A failure ends both; whichever failed or closed first is the one to blame.
  let first: 'client' | 'upstream' | null = null;
  const blame = (who: 'client' | 'upstream') => () => (first ??= who);
  client.once('error', blame('client')).once('close', blame('client'));
  res.once('error', blame('upstream')).once('close', blame('upstream'));
  try {
    await pipeline(res, client);
  } catch (err) {
    const error = first === 'client' ? 'client closed' : upstreamFailure(err, name).reason;
    return { status, bytesDown, error };
  }
  linger(client);
  return { status, bytesDown };
}

/** The 101 as the client receives it: hop-by-hop fields gone but the upgrade's own, Via added. */
function switchingHead(res: IncomingMessage): Buffer {
  const raw = res.rawHeaders;
  const fields = downstreamRawHeaders(raw);
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i] as string;
    if (UPGRADE_FIELDS.has(field.toLowerCase())) fields.push(field, raw[i + 1] as string);
  }
  return headBytes(`HTTP/1.1 101 ${res.statusMessage}`, fields);
}

/** Node's parser reads field bytes as latin1; written back the same way, obs-text survives. */
function headBytes(statusLine: string, fields: readonly string[]): Buffer {
  let head = `${statusLine}\r\n`;
  for (let i = 0; i < fields.length; i += 2) head += `${fields[i]}: ${fields[i + 1]}\r\n`;
  return Buffer.from(`${head}\r\n`, 'latin1');
}

/**
 * The client may have sent more behind the upgrade. Closing with those bytes unread would
 * reset the connection, and a reset can discard the response before the client reads it; so
 * they are read and dropped until the client closes too, or LINGER_MS passes.
 */
function linger(client: Socket): void {
  client.resume();
  client.setTimeout(LINGER_MS, () => client.destroy());
}

/** `fields` without the one named `name` (lower case). */
function withoutField(fields: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < fields.length; i += 2)
    if (fields[i]!.toLowerCase() !== name) out.push(fields[i]!, fields[i + 1]!);
  return out;
}
