import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll } from 'vitest';

/** Bytes of text the `big-fail` tool answers with, past any bound on a kept answer. */
export const BIG_FAIL_BYTES = 1024 * 1024;

export interface McpTools {
  readonly url: string;
  /** Lets `held-fail` calls (waiting after their notification) answer. */
  release(): void;
}

const TOOLS = ['ok', 'fails', 'throws', 'big-fail', 'held-fail'] as const;

/**
 * An MCP server written with the official SDK (stateless streamable HTTP, loopback port 0)
 * whose tools end the ways a call can: `ok` answers, `fails` answers `isError: true` (a tool
 * that ran and failed), `throws` makes the SDK answer a JSON-RPC error, `big-fail` answers a
 * megabyte of output with `isError: true`, `held-fail` answers `isError: true` once
 * release() is called. `json` answers in `application/json`; otherwise in
 * a Server-Sent Events stream where each call first sends a log notification, so the response
 * is not the stream's first event.
 */
export async function startMcpTools(options: { json: boolean }): Promise<McpTools> {
  let release = () => undefined as void;
  const released = new Promise<void>((r) => (release = r));
  const url = await serveStateless(() => toolServer(options.json, released), options.json);
  return { url, release: () => release() };
}

/**
 * Serves a fresh SDK server per request over stateless streamable HTTP on loopback port 0
 * (closed after the file's tests); resolves with its `/mcp` URL. `json`: answers in
 * `application/json`, else in Server-Sent Events.
 */
export async function serveStateless(make: () => Server, json: boolean): Promise<string> {
  const http = createServer(async (req, res) => {
    // Stateless: no server stream to open (GET) nor session to end (DELETE).
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    const server = make();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: json,
    });
    res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  afterAll(() => {
    http.closeAllConnections();
    return new Promise<void>((r) => http.close(() => r()));
  });
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

function toolServer(json: boolean, released: Promise<void>): Server {
  const server = new Server(
    { name: 'trajgate-test-tools', version: '0.0.0' },
    { capabilities: { tools: {}, logging: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((name) => ({ name, inputSchema: { type: 'object' as const } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    if (!json) {
      await extra.sendNotification({
        method: 'notifications/message',
        params: { level: 'info', data: `running ${name}` },
      });
    }
    const text = (t: string) => [{ type: 'text' as const, text: t }];
    switch (name) {
      case 'ok':
        return { content: text('done') };
      case 'fails':
        return { content: text('tests failed: 3 of 12'), isError: true };
      case 'held-fail':
        await released;
        return { content: text('failed late'), isError: true };
      case 'big-fail':
        return { content: text('x'.repeat(BIG_FAIL_BYTES)), isError: true };
      case 'throws':
        throw new McpError(ErrorCode.InternalError, 'the tool crashed');
      default:
        throw new McpError(ErrorCode.InvalidParams, `no tool ${name}`);
    }
  });
  return server;
}
