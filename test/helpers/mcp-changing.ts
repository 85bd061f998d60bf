import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { serveStateless } from './mcp-tools.js';

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
  const url = await serveStateless(() => {
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
    return server;
  }, options.json);
  return {
    url,
    set: (next) => void (tools = [...next]),
    called,
  };
}
