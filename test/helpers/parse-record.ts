import { createServer } from 'node:http';
import type {
  IncomingHttpHeaders,
  IncomingMessage,
  Server,
  ServerOptions,
  ServerResponse,
} from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { headerObject } from '../../src/ingress/lean/header-object.js';
import { RequestParser } from '../../src/ingress/lean/request-parser.js';
import { parseErrorProblem } from '../../src/ingress/request-rules.js';

/**
 * What a parser made of one connection's bytes, in one shape for both `node:http` and the lean
 * parser so the two compare with toEqual. Bytes are latin1 strings: one char per byte.
 */
export interface ParsedRequest {
  method: string;
  url: string;
  version: string;
  rawHeaders: readonly string[];
  /** `req.headers`; the lean engine's from headerObject. */
  headers: IncomingHttpHeaders;
  /** null on an upgrade: `node:http` makes no response to read it from. */
  keepAlive: boolean | null;
  upgrade: boolean;
  body: string;
  complete: boolean;
  rawTrailers: readonly string[];
}

export interface ParseRecord {
  requests: ParsedRequest[];
  /** What followed an upgrade's head, or null. */
  tail: string | null;
  /** The refusal, as the proxy would answer it (parseErrorProblem). */
  error: { code: string; status: number; reason: string } | null;
}

const refusal = (err: Error & { code?: string; reason?: string }) => ({
  code: err.code ?? '',
  ...parseErrorProblem(err),
});

/** The lean parser fed `chunks` one `feed` each, then the end of input. */
export function leanParse(chunks: readonly Buffer[], headerBytes: number): ParseRecord {
  const record: ParseRecord = { requests: [], tail: null, error: null };
  let current: ParsedRequest | undefined;
  const parser = new RequestParser(
    {
      messageBegin: () => {},
      head: (h) => {
        current = {
          method: h.method,
          url: h.url,
          version: `${h.versionMajor}.${h.versionMinor}`,
          rawHeaders: h.rawHeaders,
          headers: headerObject(h.rawHeaders),
          keepAlive: h.upgrade ? null : h.shouldKeepAlive,
          upgrade: h.upgrade,
          body: '',
          complete: false,
          rawTrailers: [],
        };
        record.requests.push(current);
      },
      body: (chunk) => ((current as ParsedRequest).body += chunk.toString('latin1')),
      end: (trailers) =>
        Object.assign(current as ParsedRequest, { complete: true, rawTrailers: trailers }),
    },
    headerBytes,
  );
  try {
    for (const [i, chunk] of chunks.entries()) {
      const fed = parser.feed(chunk);
      if (fed.kind === 'more') continue;
      if (fed.kind === 'error') record.error = refusal(fed.error);
      else record.tail = Buffer.concat([fed.rest, ...chunks.slice(i + 1)]).toString('latin1');
      return record;
    }
    const err = parser.finish();
    if (err !== null) record.error = refusal(err);
    return record;
  } finally {
    parser.close();
  }
}

/** One connection's record, and the requests whose `complete` and trailers it reads at close. */
interface Watched {
  readonly record: ParseRecord;
  readonly pending: [ParsedRequest, IncomingMessage][];
}

/**
 * A real `node:http` server on loopback, with `options` (the proxy's) and the proxy's listeners
 * (request, checkContinue, checkExpectation, connect, upgrade, clientError), that records what
 * Node parsed from each connection. It never answers: what it read is the record.
 */
export class NodeReference {
  readonly #server: Server;
  readonly #watched = new Map<Duplex, Watched>();
  /** By the client's port: resolves its `parse` once the server side has closed. */
  readonly #done = new Map<number, (record: ParseRecord) => void>();

  private constructor(options: ServerOptions) {
    const server = createServer(options);
    server.on('connection', (socket: Socket) => this.#watch(socket));
    // Body chunks arrive in the tick after the read that parsed them, `complete` and trailers
    // in the parse itself: all are in place when the client's end is seen.
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      const parsed = this.#add(req, res.shouldKeepAlive);
      req.on('data', (chunk: Buffer) => (parsed.body += chunk.toString('latin1')));
    };
    for (const event of ['request', 'checkContinue', 'checkExpectation']) {
      server.on(event, onRequest);
    }
    const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.#add(req, null);
      const { record } = this.#watched.get(socket) as Watched;
      record.tail = head.toString('latin1');
      socket.on('data', (chunk: Buffer) => (record.tail += chunk.toString('latin1')));
    };
    server.on('connect', onUpgrade);
    server.on('upgrade', onUpgrade);
    server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
      const watched = this.#watched.get(socket) as Watched;
      watched.record.error ??= refusal(err);
      socket.destroy();
    });
    this.#server = server;
  }

  static async start(options: ServerOptions): Promise<NodeReference> {
    const ref = new NodeReference(options);
    await new Promise<void>((r) => ref.#server.listen(0, '127.0.0.1', r));
    return ref;
  }

  /** Sends `bytes` on a new connection, ends it, and resolves with what Node made of them. */
  parse(bytes: Buffer, timeoutMs = 15_000): Promise<ParseRecord> {
    return new Promise((resolve, reject) => {
      const port = (this.#server.address() as AddressInfo).port;
      const client = connect({ host: '127.0.0.1', port });
      const timer = setTimeout(() => {
        client.destroy();
        reject(new Error(`node:http did not finish ${JSON.stringify(bytes.toString('latin1'))}`));
      }, timeoutMs);
      client.on('error', () => {}); // the server may close while bytes are still going out
      client.resume();
      client.once('connect', () => {
        const local = client.localPort as number;
        this.#done.set(local, (record) => {
          this.#done.delete(local);
          clearTimeout(timer);
          client.destroy();
          resolve(record);
        });
        client.end(bytes);
      });
    });
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((r) => this.#server.close(() => r()));
  }

  #watch(socket: Socket): void {
    const watched: Watched = { record: { requests: [], tail: null, error: null }, pending: [] };
    this.#watched.set(socket, watched);
    const port = socket.remotePort as number;
    // After node:http's own end handler (finish(), maybe a clientError): nothing more to read.
    socket.once('end', () => setImmediate(() => socket.destroy()));
    socket.once('close', () => {
      this.#watched.delete(socket);
      for (const [parsed, req] of watched.pending) Object.assign(parsed, whole(req));
      setImmediate(() => this.#done.get(port)?.(watched.record));
    });
  }

  /** A request as Node emitted it; keepAlive null marks an upgrade (CONNECT or Upgrade). */
  #add(req: IncomingMessage, keepAlive: boolean | null): ParsedRequest {
    const parsed: ParsedRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      version: req.httpVersion,
      rawHeaders: req.rawHeaders,
      headers: req.headers,
      keepAlive,
      upgrade: keepAlive === null,
      body: '',
      ...whole(req),
    };
    const watched = this.#watched.get(req.socket) as Watched;
    watched.record.requests.push(parsed);
    watched.pending.push([parsed, req]);
    return parsed;
  }
}

function whole(req: IncomingMessage): Pick<ParsedRequest, 'complete' | 'rawTrailers'> {
  return { complete: req.complete, rawTrailers: req.rawTrailers };
}
