// A bare JSON-RPC answerer, far cheaper than any real MCP server: it shows the bridge's own
// ceiling. Answers every POST with a fixed tools/call result. Prints {"port":N}.
import http from 'node:http';

const BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  result: { content: [{ type: 'text', text: 'ok' }] },
});
const web = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(BODY),
    });
    res.end(BODY);
  });
});
web.keepAliveTimeout = 60_000;
web.listen(0, '127.0.0.1', () =>
  process.stdout.write(JSON.stringify({ port: web.address().port }) + '\n'),
);
