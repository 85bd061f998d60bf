// Bench upstream: a keep-alive HTTPS server on 127.0.0.1 with the test certificate
// (test/fixtures/tls/server.pem, signed by the test CA), answering every request 200 with a
// fixed 64-byte body. Prints {"port":PORT} once it listens.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/tls');
const BODY = Buffer.alloc(64, 'x');
const HEADERS = { 'content-type': 'text/plain', 'content-length': BODY.length };

const server = https.createServer(
  {
    cert: readFileSync(join(fixtures, 'server.pem')),
    key: readFileSync(join(fixtures, 'server-key.pem')),
  },
  (req, res) => {
    req.resume();
    res.writeHead(200, HEADERS);
    res.end(BODY);
  },
);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
});
