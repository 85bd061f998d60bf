import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach } from 'vitest';
import type { TestGateway } from './gateway.js';
import { startTestGateway } from './gateway.js';
import { tempDir } from './tmp.js';
import { readBody } from './upstream.js';

const BIN = join(import.meta.dirname, '../../node_modules/.bin');

export interface Supergateway {
  readonly port: number;
  /** `http://127.0.0.1:PORT/mcp` */
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * The TCP port `pid` listens on, once it does (within `ms`). supergateway takes `--port 0`
 * but logs 0, not the port it got: its listening socket is found through /proc instead
 * (socket inodes among its open files, matched against the kernel's table of listeners).
 */
async function listeningPort(pid: number, ms: number): Promise<number> {
  const until = Date.now() + ms;
  for (;;) {
    const port = listenerOf(pid);
    if (port !== undefined) return port;
    if (Date.now() > until) throw new Error(`process ${pid} listens on no TCP port after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function listenerOf(pid: number): number | undefined {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return undefined;
  }
  const inodes = new Set<string>();
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1] as string);
    } catch {
      // closed meanwhile
    }
  }
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      // sl local_address rem_address st … inode: LISTEN is state 0A.
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9] as string))
        return parseInt((f[1] as string).split(':')[1] as string, 16);
    }
  }
  return undefined;
}

/** Process ids whose parent is `pid` (supergateway's per-session `sh -c` children). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The official @modelcontextprotocol/server-filesystem (stdio) allowed on `dirs`, exposed over
 * stateful streamable HTTP by supergateway on a free loopback port. Supergateway starts one
 * child per MCP session, each in its own process group; stop() sends SIGTERM to supergateway,
 * then SIGKILL to whatever of it and of those groups is still alive (bounded, by id only).
 */
export async function startSupergateway(dirs: readonly string[]): Promise<Supergateway> {
  const child = spawn(
    join(BIN, 'supergateway'),
    [
      '--stdio',
      [join(BIN, 'mcp-server-filesystem'), ...dirs].join(' '),
      '--outputTransport',
      'streamableHttp',
      '--port',
      '0',
      '--stateful',
      '--logLevel',
      'none',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const groups = new Set<number>();
  const timer = setInterval(() => {
    if (child.pid) for (const p of childrenOf(child.pid)) groups.add(p);
  }, 200);
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      clearInterval(timer);
      if (child.pid) for (const p of childrenOf(child.pid)) groups.add(p);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      for (const pgid of groups) {
        try {
          process.kill(-pgid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      const until = Date.now() + 3_000;
      while ([...groups].some(alive) && Date.now() < until)
        await new Promise((r) => setTimeout(r, 25));
    })());
  afterAll(stop);
  let port: number;
  try {
    port = await listeningPort(child.pid as number, 15_000);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}; supergateway stderr: ${stderr}`);
  }
  return { port, url: `http://127.0.0.1:${port}/mcp`, stop };
}

/**
 * The official MCP client over streamable HTTP, with the agent's bearer token. With `roots`,
 * it declares the roots capability and answers the server's roots/list with those URIs.
 */
export async function mcpClient(
  url: string,
  token: string,
  options: { roots?: readonly string[] } = {},
): Promise<Client> {
  const { roots } = options;
  const client = new Client(
    { name: 'trajgate-test', version: '0.0.0' },
    roots ? { capabilities: { roots: { listChanged: true } } } : {},
  );
  if (roots)
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: roots.map((uri) => ({ uri })),
    }));
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/**
 * One gateway and its MCP clients per test, closed and stopped after each: `start` runs a
 * gateway on `config` in a fresh folder, `connect` opens an SDK client to its bridge with an
 * agent's token, `keep` has another client closed with them.
 */
export function mcpPerTest(): {
  start(config: Record<string, unknown>): Promise<TestGateway>;
  connect(g: TestGateway, token: string, options?: { roots?: readonly string[] }): Promise<Client>;
  keep(client: Client): Client;
} {
  let gateway: TestGateway | undefined;
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
    await gateway?.stop();
    gateway = undefined;
  });
  const keep = (client: Client) => (clients.push(client), client);
  return {
    async start(config) {
      gateway = await startTestGateway(config, { dir: tempDir() });
      return gateway;
    },
    async connect(g, token, options = {}) {
      return keep(await mcpClient(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, token, options));
    },
    keep,
  };
}

/** The JSON-RPC messages of an answer: the data lines of an SSE stream, or the JSON body. */
export function jsonRpcMessages(contentType: string | null | undefined, text: string): any[] {
  const lines = contentType?.startsWith('text/event-stream')
    ? text.split('\n').flatMap((l) => (l.startsWith('data: ') ? [l.slice(6)] : []))
    : [text].filter((t) => t.trim() !== '');
  return lines.map((l) => JSON.parse(l) as unknown);
}

/** A JSON-RPC error as the SDK client throws it; trajgate's refusals carry `data`. */
export interface JsonRpcFailure {
  readonly code: number;
  readonly message: string;
  readonly data?: { verdict?: string; boundary?: string; reason?: string };
}

/** The JSON-RPC error a call was answered with; fails the test when the call succeeded. */
export async function refused(call: Promise<unknown>): Promise<JsonRpcFailure> {
  const result = await call.then(
    (r) => ({ ok: true as const, r }),
    (e: unknown) => ({ ok: false as const, e: e as JsonRpcFailure }),
  );
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result.r)}`);
  return result.e;
}

export interface McpEcho {
  readonly port: number;
  readonly url: string;
  /** Every request it received: headers, the parsed JSON body (or the raw text), the text. */
  readonly seen: { method: string; headers: IncomingHttpHeaders; body: unknown; raw: string }[];
}

/**
 * A minimal JSON-RPC upstream on loopback port 0: records each request and answers requests
 * with `{result: {echo: <method>}}` (tools/list with an empty `tools` too; notifications with
 * 202), so tests can see what the bridge let through.
 */
export async function startMcpEcho(): Promise<McpEcho> {
  const seen: McpEcho['seen'] = [];
  const server = createServer(async (req, res) => {
    const { raw, body } = await readBody(req);
    seen.push({ method: req.method ?? '', headers: req.headers, body, raw });
    const msg = body as { id?: unknown; method?: unknown };
    if (msg?.id === undefined) return res.writeHead(202).end();
    // A tools/list answer must hold a list for the bridge to pass it on.
    const tools = msg.method === 'tools/list' ? { tools: [] } : {};
    const result = { echo: msg.method, ...tools };
    const out = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result });
    res.writeHead(200, { 'content-type': 'application/json' }).end(out);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { port, url: `http://127.0.0.1:${port}/mcp`, seen };
}

/** An initialize request as a client without capabilities sends it (protocol 2025-11-25). */
export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'raw', version: '0' },
  },
};

export interface RawMcpSession {
  /** The Mcp-Session-Id the initialize answer carried ('' when none). */
  readonly id: string;
  /** POSTs `body` (bytes as given) in the session; the JSON-RPC answers it got back. */
  send(
    body: string | Buffer,
    headers?: Record<string, string>,
  ): Promise<{ status: number; messages: any[] }>;
}

/**
 * A streamable HTTP session opened by hand (initialize, then notifications/initialized), for
 * bodies no SDK client would send: other charsets, raw bytes. Answers may come as JSON or as
 * a Server-Sent Events stream that ends with the response.
 */
export async function rawMcpSession(
  url: string,
  headers: Record<string, string> = {},
): Promise<RawMcpSession> {
  const base = {
    accept: 'application/json, text/event-stream',
    'content-type': 'application/json',
    ...headers,
  };
  const post = async (body: string | Buffer, extra: Record<string, string>) => {
    const res = await fetch(url, { method: 'POST', headers: { ...base, ...extra }, body });
    const messages = jsonRpcMessages(res.headers.get('content-type'), await res.text());
    return { status: res.status, messages, res };
  };
  const init = await post(JSON.stringify(INITIALIZE), {});
  const session = { 'mcp-session-id': init.res.headers.get('mcp-session-id') ?? '' };
  await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), session);
  return {
    id: session['mcp-session-id'],
    async send(body, extra = {}) {
      const { status, messages } = await post(body, { ...session, ...extra });
      return { status, messages };
    },
  };
}
