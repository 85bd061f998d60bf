// Bench upstream: a real MCP server (the official SDK's McpServer over its streamable HTTP
// transport, stateless, JSON responses) with one small tool, `read_text_file`, answering with
// a short text. Prints {"port":N} once it listens on 127.0.0.1.
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function server() {
  const mcp = new McpServer({ name: 'bench', version: '1.0.0' });
  mcp.registerTool(
    'read_text_file',
    { description: 'echo a path', inputSchema: { path: z.string() } },
    async ({ path }) => ({ content: [{ type: 'text', text: `read ${path}` }] }),
  );
  return mcp;
}

const web = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  // Stateless: a server and transport per request, as the SDK documents for this mode.
  const mcp = server();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on('close', () => {
    transport.close();
    mcp.close();
  });
  await mcp.connect(transport);
  await transport.handleRequest(req, res, body);
});
web.keepAliveTimeout = 60_000;
web.listen(0, '127.0.0.1', () =>
  process.stdout.write(JSON.stringify({ port: web.address().port }) + '\n'),
);
