// Pushes N bytes to the upstream's sink, directly or through a CONNECT tunnel, and prints
// {"bytes":N,"seconds":S,"MBps":R} (MB = 10^6 bytes). The clock starts after the tunnel is
// established and stops when the sink confirms it received every byte.
// Usage: node tunnel-client.mjs --target 127.0.0.1:PORT --bytes N [--proxy 127.0.0.1:PORT]
import net from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    proxy: { type: 'string' },
    bytes: { type: 'string', default: String(512 * 2 ** 20) },
    timeout: { type: 'string', default: '120000' },
  },
});
const total = Number(values.bytes);
const split = (hostPort) => {
  const i = hostPort.lastIndexOf(':');
  return [hostPort.slice(0, i).replace(/^\[|\]$/g, ''), Number(hostPort.slice(i + 1))];
};
const fail = (message) => {
  process.stderr.write(`tunnel-client: ${message}\n`);
  process.exit(1);
};
setTimeout(() => fail(`timed out after ${values.timeout} ms`), Number(values.timeout)).unref();

const [host, port] = split(values.proxy ?? values.target);
const sock = net.connect(port, host);
sock.on('error', (err) => fail(err.message));
sock.on('close', () => fail('connection closed before the sink confirmed'));

let start = 0;
let reply = '';
let handshake = values.proxy ? '' : null;
sock.on('connect', () => {
  if (handshake === null) return send();
  sock.write(`CONNECT ${values.target} HTTP/1.1\r\nHost: ${values.target}\r\n\r\n`);
});
sock.on('data', (chunk) => {
  if (handshake !== null) {
    handshake += chunk.toString('latin1');
    const end = handshake.indexOf('\r\n\r\n');
    if (end < 0) return;
    const status = handshake.slice(0, handshake.indexOf('\r\n'));
    if (!/^HTTP\/1\.[01] 200/.test(status)) fail(`CONNECT refused: ${status}`);
    handshake = null;
    return send();
  }
  reply += chunk.toString('latin1');
  if (!reply.endsWith('\n')) return;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (Number(reply) !== total) fail(`sink received ${reply.trim()} bytes, expected ${total}`);
  process.stdout.write(
    JSON.stringify({ bytes: total, seconds, MBps: total / 1e6 / seconds }) + '\n',
  );
  process.exit(0);
});

function send() {
  start = process.hrtime.bigint();
  const header = Buffer.alloc(8);
  header.writeBigUInt64BE(BigInt(total));
  sock.write(header);
  const chunk = Buffer.alloc(2 ** 20, 'a');
  let sent = 0;
  const pump = () => {
    while (sent < total) {
      const n = Math.min(chunk.length, total - sent);
      sent += n;
      if (!sock.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        sock.once('drain', pump);
        return;
      }
    }
  };
  pump();
}
