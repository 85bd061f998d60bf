// Pushes N bytes to the upstream's sink, directly, through a CONNECT tunnel or through a SOCKS5
// tunnel, and prints {"bytes":N,"seconds":S,"MBps":R} (MB = 10^6 bytes). The clock starts after
// the tunnel is established and stops when the sink confirms it received every byte.
// Usage: node tunnel-client.mjs --target 127.0.0.1:PORT --bytes N
//          [--proxy 127.0.0.1:PORT | --socks 127.0.0.1:PORT]
import net from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    proxy: { type: 'string' },
    socks: { type: 'string' },
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
if (values.proxy && values.socks) fail('--proxy and --socks exclude each other');

/**
 * SOCKS5 without authentication (RFC 1928): the greeting, then CONNECT to an IPv4 target.
 * `open()` gives the first bytes to send; `read(buffered)` gives null while a reply is
 * incomplete, { rest } after the greeting's reply, { done } once the tunnel is up; a refusal
 * fails the run with its reply code.
 */
function socks5([host, port]) {
  const ip = host.split('.').map(Number);
  if (ip.length !== 4 || !ip.every((b) => Number.isInteger(b) && b >= 0 && b <= 255))
    fail(`--socks needs an IPv4 --target, got ${host}`);
  const request = Buffer.from([5, 1, 0, 1, ...ip, port >> 8, port & 0xff]);
  let step = 'greeting';
  return {
    open: () => Buffer.from([5, 1, 0]),
    read(buf, sock) {
      if (step === 'greeting') {
        if (buf.length < 2) return null;
        if (buf[0] !== 5 || buf[1] !== 0) fail(`SOCKS5 method refused: ${buf[1]}`);
        step = 'reply';
        sock.write(request);
        return { rest: buf.subarray(2) };
      }
      if (buf.length < 5) return null;
      if (buf[1] !== 0) fail(`SOCKS5 CONNECT refused: reply 0x${buf[1].toString(16)}`);
      // The bound address: IPv4, a name (length-prefixed) or IPv6, then the port (§ 6).
      const addr = { 1: 4, 3: 1 + buf[4], 4: 16 }[buf[3]];
      if (addr === undefined) fail(`SOCKS5 reply with address type ${buf[3]}`);
      const length = 4 + addr + 2;
      if (buf.length < length) return null;
      return { done: buf.subarray(length) };
    },
  };
}

/** CONNECT (RFC 9110 § 9.3.6): the request, then a 2xx status line and headers. */
function httpConnect(target) {
  return {
    open: () => `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`,
    read(buf) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return null;
      const status = buf.subarray(0, buf.indexOf('\r\n')).toString('latin1');
      if (!/^HTTP\/1\.[01] 200/.test(status)) fail(`CONNECT refused: ${status}`);
      return { done: buf.subarray(end + 4) };
    },
  };
}

const via = values.socks ?? values.proxy;
const handshake = values.socks
  ? socks5(split(values.target))
  : values.proxy
    ? httpConnect(values.target)
    : null;
const [host, port] = split(via ?? values.target);
const sock = net.connect(port, host);
sock.on('error', (err) => fail(err.message));
sock.on('close', () => fail('connection closed before the sink confirmed'));

let start = 0;
let reply = '';
let pending = handshake ? Buffer.alloc(0) : null;
sock.on('connect', () => (handshake ? sock.write(handshake.open()) : send()));
sock.on('data', (chunk) => {
  if (pending !== null) {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      const step = handshake.read(pending, sock);
      if (step === null) return;
      if (step.rest) {
        pending = step.rest;
        continue;
      }
      if (step.done.length > 0) fail('the proxy sent bytes before the sink could');
      pending = null;
      return send();
    }
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
