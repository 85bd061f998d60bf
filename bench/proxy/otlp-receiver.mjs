// Bench OTLP/HTTP receiver for run.mjs's otlp phase: answers every POST to /v1/traces and
// /v1/logs 200 `{}` as a collector does, counting export requests and bytes per path (no
// decoding: the load clients share its core). GET /counts answers the counts as JSON. Prints
// {"port":PORT} once it listens.
import http from 'node:http';

const counts = {};
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/counts') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counts));
    return;
  }
  const c = (counts[req.url] ??= { requests: 0, bytes: 0 });
  c.requests++;
  req.on('data', (d) => (c.bytes += d.length));
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
