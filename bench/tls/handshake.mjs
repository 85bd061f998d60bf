// First TLS handshake to a never-seen host through an intercepting proxy: for each host, open
// a TCP connection to the proxy, send `CONNECT host:port`, and time from that write until the
// client's TLS handshake (verifying the proxy's leaf against `--ca`) completes. Then the same
// hosts again (leaf cached) for comparison. Prints one JSON line with every sample in ms.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    'proxy-port': { type: 'string' },
    hosts: { type: 'string' },
    port: { type: 'string', default: '443' },
    ca: { type: 'string' },
  },
});
const ca = readFileSync(values.ca);
const proxyPort = Number(values['proxy-port']);
const hosts = values.hosts.split(',');

function sample(host) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(proxyPort, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${host}: no handshake within 5 s`));
    }, 5000);
    socket.once('error', reject);
    socket.once('connect', () => {
      const t0 = performance.now();
      socket.write(
        `CONNECT ${host}:${values.port} HTTP/1.1\r\nHost: ${host}:${values.port}\r\n\r\n`,
      );
      let head = '';
      const onData = (d) => {
        head += d.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        socket.off('data', onData);
        if (!/^HTTP\/1\.1 200/.test(head))
          return reject(new Error(`${host}: ${head.split('\r\n')[0]}`));
        const secure = tls.connect({ socket, ca, host });
        secure.once('secureConnect', () => {
          const ms = performance.now() - t0;
          clearTimeout(timer);
          secure.end();
          resolve(ms);
        });
        secure.once('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      };
      socket.on('data', onData);
    });
  });
}

const first = [];
for (const host of hosts) first.push(await sample(host));
const cached = [];
for (const host of hosts) cached.push(await sample(host));
process.stdout.write(JSON.stringify({ first, cached }) + '\n');
