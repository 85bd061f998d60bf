// Bench upstream: a keep-alive HTTP server answering every request 200 with a fixed 64-byte
// body, and a TCP sink for tunnel tests. Prints {"http":PORT,"sink":PORT} once both listen.
//
// Sink protocol: the client sends an 8-byte big-endian length N, then N bytes; the sink
// replies "<N>\n" once all N arrived, so the client's clock covers delivery, not just
// buffering, and no half-close has to survive the proxy.
import http from 'node:http';
import net from 'node:net';

const BODY = Buffer.alloc(64, 'x');
const HEADERS = { 'content-type': 'text/plain', 'content-length': BODY.length };

const web = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, HEADERS);
  res.end(BODY);
});
web.keepAliveTimeout = 60_000;

const sink = net.createServer((sock) => {
  let header = Buffer.alloc(0);
  let expected = -1;
  let received = 0;
  sock.on('data', (chunk) => {
    if (expected < 0) {
      header = Buffer.concat([header, chunk]);
      if (header.length < 8) return;
      expected = Number(header.readBigUInt64BE(0));
      chunk = header.subarray(8);
    }
    received += chunk.length;
    if (received >= expected) sock.end(`${received}\n`);
  });
  sock.on('error', () => sock.destroy());
});

const listen = (server) =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));

const ports = { http: await listen(web), sink: await listen(sink) };
process.stdout.write(JSON.stringify(ports) + '\n');
