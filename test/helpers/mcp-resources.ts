import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { SubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll } from 'vitest';
import { z } from 'zod';
import { readBody } from './upstream.js';

export interface McpResources {
  readonly url: string;
  /** Every HTTP request it received: method, headers and the parsed body (none for GET). */
  readonly seen: { method: string; headers: IncomingHttpHeaders; body: unknown }[];
  /** The file paths its `file` template read, and the URIs subscribed to. */
  readonly reads: string[];
  readonly subscribed: string[];
  /** The server-side ids of its open sessions. */
  sessions(): string[];
}

/**
 * An MCP server written with the official SDK (McpServer over stateful streamable HTTP on
 * loopback port 0, a session per initialize) with resources and a prompt: the template
 * `file:///{+path}` reads any file the URI names (as file-resource servers do), `memo://status`
 * is a resource of another scheme, `review` a prompt with a completable argument, and
 * resources/subscribe is accepted. It records what reached it, so tests see what trajgate let
 * through and how.
 */
export async function startMcpResources(): Promise<McpResources> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const seen: McpResources['seen'] = [];
  const reads: string[] = [];
  const subscribed: string[] = [];
  const http = createServer(async (req, res) => {
    const body = req.method === 'POST' ? (await readBody(req)).body : undefined;
    seen.push({ method: req.method ?? '', headers: req.headers, body });
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
    if (transport === undefined) {
      if (sid !== undefined) {
        const error = { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'no session' } };
        return void res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify(error));
      }
      const t = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void transports.set(id, t),
        onsessionclosed: (id) => void transports.delete(id),
      });
      transport = t;
      await resourceServer(reads, subscribed).connect(t);
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  afterAll(async () => {
    await Promise.all([...transports.values()].map((t) => t.close()));
    http.closeAllConnections();
    await new Promise<void>((r) => http.close(() => r()));
  });
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return { url, seen, reads, subscribed, sessions: () => [...transports.keys()] };
}

function resourceServer(reads: string[], subscribed: string[]): McpServer {
  const mcp = new McpServer(
    { name: 'trajgate-test-resources', version: '0.0.0' },
    { capabilities: { resources: { subscribe: true } } },
  );
  const file = new ResourceTemplate('file:///{+path}', { list: undefined });
  mcp.registerResource('file', file, { mimeType: 'text/plain' }, (uri) => {
    const path = fileURLToPath(uri);
    reads.push(path);
    return { contents: [{ uri: uri.href, text: readFileSync(path, 'utf8') }] };
  });
  mcp.registerResource('status', 'memo://status', {}, (uri) => ({
    contents: [{ uri: uri.href, text: 'all good' }],
  }));
  mcp.registerPrompt(
    'review',
    {
      description: 'Review a file',
      argsSchema: { file: completable(z.string(), (v) => [`${v}.ts`]) },
    },
    ({ file }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Review ${file}` } }],
    }),
  );
  mcp.server.setRequestHandler(SubscribeRequestSchema, (request) => {
    subscribed.push(request.params.uri);
    return {};
  });
  return mcp;
}
