// sandbox-runtime's HTTP proxy (npm @anthropic-ai/sandbox-runtime, `createHttpProxyServer` in
// dist/sandbox/http-proxy.js: the proxy its SandboxManager puts behind the sandbox's port) on
// 127.0.0.1:0, its host filter allowing every host (the bench's origins are loopback ones no
// sandbox config would list), no Proxy-Authorization token. With `--tls-terminate` it terminates
// every CONNECT's TLS in-process (`mitmCA`: the ephemeral RSA-2048 CA `createMitmCA({})` makes,
// as with `network.tlsTerminate: {}`) and re-originates the requests over TLS; it verifies the
// upstream against the system roots and NODE_EXTRA_CA_CERTS, as the sandbox does.
// Prints {"port":N,"version":V} once it listens, with `"ca":PATH` (the CA certificate the
// client must trust) when it terminates TLS. The CA is written under os.tmpdir(): TMPDIR.
// Usage: node sandbox-runtime-proxy.mjs [--tls-terminate]
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { 'tls-terminate': { type: 'boolean', default: false } } });

const require = createRequire(import.meta.url);
let pkg;
try {
  pkg = require.resolve('@anthropic-ai/sandbox-runtime/package.json');
} catch {
  process.stderr.write('@anthropic-ai/sandbox-runtime is not installed (npm ci)\n');
  process.exit(1);
}
const { version } = require(pkg);
// The package has no `exports` map: its files are reachable by path, the proxy among them
// (the package's index exports only SandboxManager, which also sandboxes a command).
const { createHttpProxyServer } =
  await import('@anthropic-ai/sandbox-runtime/dist/sandbox/http-proxy.js');
const { createMitmCA } = await import('@anthropic-ai/sandbox-runtime/dist/sandbox/mitm-ca.js');

const mitmCA = values['tls-terminate'] ? createMitmCA({}) : undefined;
const server = createHttpProxyServer({ filter: () => true, ...(mitmCA ? { mitmCA } : {}) });
server.listen(0, '127.0.0.1', () => {
  const line = { port: server.address().port, version, ...(mitmCA ? { ca: mitmCA.certPath } : {}) };
  process.stdout.write(JSON.stringify(line) + '\n');
});
