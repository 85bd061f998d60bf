// The "minimal Node forwarder" floor: absolute-form HTTP through a keep-alive agent, CONNECT by
// piping sockets. No policy, no logging — what any Node proxy costs before it does anything.
// Usage: node floor-forwarder.mjs [PORT] (on 127.0.0.1; default 0, a free port); prints
// {"port":N} once it listens.
import http from 'node:http';
import net from 'node:net';
import { HOP } from './hop-fields.mjs';

const endToEnd = (headers) =>
  Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP.has(k)));

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

const server = http.createServer((req, res) => {
  let url;
  try {
    url = new URL(req.url);
  } catch {
    res.writeHead(400).end();
    return;
  }
  const upstream = http.request(
    {
      agent,
      method: req.method,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || 80,
      path: url.pathname + url.search,
      headers: endToEnd(req.headers),
    },
    (up) => {
      res.writeHead(up.statusCode, endToEnd(up.headers));
      up.pipe(res);
    },
  );
  upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
  req.pipe(upstream);
});
server.keepAliveTimeout = 60_000;

server.on('connect', (req, client, head) => {
  let url;
  try {
    url = new URL(`http://${req.url}`);
  } catch {
    client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    return;
  }
  const upstream = net.connect(Number(url.port), url.hostname.replace(/^\[|\]$/g, ''), () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'));
  client.on('error', () => upstream.destroy());
});

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
});
