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
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll } from 'vitest';

export interface ChangingTools {
  readonly url: string;
  /** The tools the server lists from now on (the next tools/list answers with them). */
  set(tools: readonly Tool[]): void;
  /** Names of the tools called so far, in order. */
  readonly called: readonly string[];
}

/**
 * An MCP server written with the official SDK (stateless streamable HTTP, loopback port 0)
 * whose tool list changes on demand, as a server turning on its users would: every tool it
 * lists answers a call with `called NAME`. `json` answers in `application/json`, otherwise in
 * Server-Sent Events.
 */
export async function startChangingTools(
  initial: readonly Tool[],
  options: { json: boolean } = { json: false },
): Promise<ChangingTools> {
  let tools = [...initial];
  const called: string[] = [];
  const http = createServer(async (req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    const server = new Server(
      { name: 'trajgate-changing-tools', version: '0.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const name = request.params.name;
      if (!tools.some((t) => t.name === name))
        throw new McpError(ErrorCode.InvalidParams, `no tool ${name}`);
      called.push(name);
      return { content: [{ type: 'text' as const, text: `called ${name}` }] };
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: options.json,
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
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return {
    url,
    set: (next) => void (tools = [...next]),
    called,
  };
}
