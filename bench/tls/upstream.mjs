// Bench upstream: a keep-alive HTTPS server on 127.0.0.1 with the test certificate
// (test/fixtures/tls/server.pem, signed by the test CA), answering every request 200 with a
// fixed 64-byte body. With `--h2` it offers HTTP/2 by ALPN (and HTTP/1.1 to a client that
// offers only that). With `--expect-auth VALUE` it answers 401 to a request whose
// Authorization is not exactly VALUE (what a credential swap must deliver). Prints
// {"port":PORT} once it listens.
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/tls');
const BODY = Buffer.alloc(64, 'x');
const HEADERS = { 'content-type': 'text/plain', 'content-length': BODY.length };

const tlsOptions = {
  cert: readFileSync(join(fixtures, 'server.pem')),
  key: readFileSync(join(fixtures, 'server-key.pem')),
};
const { values } = parseArgs({
  options: { h2: { type: 'boolean', default: false }, 'expect-auth': { type: 'string' } },
});
const expected = values['expect-auth'];
const answer = (req, res) => {
  req.resume();
  res.writeHead(
    expected === undefined || req.headers.authorization === expected ? 200 : 401,
    HEADERS,
  );
  res.end(BODY);
};
const server = values.h2
  ? http2.createSecureServer({ ...tlsOptions, allowHTTP1: true }, answer)
  : https.createServer(tlsOptions, answer);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
});
