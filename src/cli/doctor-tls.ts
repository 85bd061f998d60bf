import { execFile } from 'node:child_process';
import type { NetworkPattern } from '../event/network-pattern.js';
import { parseNetworkPattern } from '../event/network-pattern.js';
import type { Check, DoctorContext } from './doctor-context.js';
import { caFiles } from './env.js';
import { clientVars } from './env-vars.js';

/**
 * A Host no tunnel is to: the gateway answers the inner request 421 itself (ingress/
 * inner-handlers.ts), so a client that got that far verified the certificate and nothing was sent on.
 */
const OTHER_HOST = 'trajgate-doctor.invalid';

/** A concrete name an intercept pattern covers, and its port: a wildcard's own label added. */
export function interceptedName(p: NetworkPattern): { host: string; port: number } {
  return {
    host: p.wildcard ? `trajgate-doctor.${p.host}` : p.host,
    port: p.portNamed ? (p.ports[0] as number) : 443,
  };
}

/** Node: CONNECT through HTTPS_PROXY, then a TLS handshake with Node's roots + NODE_EXTRA_CA_CERTS. */
const NODE = `
const http = require('node:http'), tls = require('node:tls');
const [host, port] = process.argv.slice(1);
const p = new URL(process.env.HTTPS_PROXY);
const auth = p.username ? { 'proxy-authorization': 'Basic ' + Buffer.from(decodeURIComponent(p.username) + ':' + decodeURIComponent(p.password)).toString('base64') } : {};
http.request({ host: p.hostname.replace(/^\\[|\\]$/g, ''), port: p.port, method: 'CONNECT', path: host + ':' + port, headers: auth, agent: false })
  .on('connect', (res, socket) => {
    if (res.statusCode !== 200) { console.log('CONNECT answered ' + res.statusCode); process.exit(1); }
    const s = tls.connect({ socket, servername: host }, () => { console.log('verified'); s.destroy(); });
    s.on('error', (e) => { console.log(e.code + ': ' + e.message); process.exit(1); });
  })
  .on('error', (e) => { console.log(e.message); process.exit(1); })
  .end();
`;

/** Python: the same with ssl's default context (SSL_CERT_FILE), and REQUESTS_CA_BUNDLE if requests is there. */
const PYTHON = `
import base64, os, socket, ssl, sys, urllib.parse
host, port = sys.argv[1], int(sys.argv[2])
p = urllib.parse.urlsplit(os.environ['HTTPS_PROXY'])
def handshake(ctx):
    s = socket.create_connection((p.hostname, p.port), timeout=30)
    auth = ''
    if p.username:
        pair = urllib.parse.unquote(p.username) + ':' + urllib.parse.unquote(p.password)
        auth = 'Proxy-Authorization: Basic ' + base64.b64encode(pair.encode()).decode() + '\\r\\n'
    s.sendall(f'CONNECT {host}:{port} HTTP/1.1\\r\\nHost: {host}:{port}\\r\\n{auth}\\r\\n'.encode())
    head = b''
    while b'\\r\\n\\r\\n' not in head:
        got = s.recv(1)
        if not got: sys.exit('the proxy closed the CONNECT')
        head += got
    if b' 200 ' not in head.split(b'\\r\\n')[0]: sys.exit('CONNECT answered ' + head.split(b'\\r\\n')[0].decode())
    ctx.wrap_socket(s, server_hostname=host).close()
handshake(ssl.create_default_context())
said = 'verified (ssl)'
try:
    import requests
    handshake(ssl.create_default_context(cafile=os.environ['REQUESTS_CA_BUNDLE']))
    said = 'verified (ssl, requests)'
except ImportError:
    pass
print(said)
`;

interface Client {
  readonly name: string;
  readonly file: string;
  readonly args: (host: string, port: number) => string[];
  /** Whether the run shows a verified handshake. */
  readonly verified: (code: number, out: string) => boolean;
}

const CLIENTS: readonly Client[] = [
  {
    name: 'curl',
    file: 'curl',
    args: (h, p) => [
      '-sS',
      '--http1.1',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-H',
      `Host: ${OTHER_HOST}`,
      `https://${h}:${p}/trajgate-doctor`,
    ],
    verified: (code, out) => code === 0 && out.startsWith('421'),
  },
  {
    name: 'git',
    file: 'git',
    args: (h, p) => [
      '-c',
      'http.version=HTTP/1.1',
      '-c',
      `http.extraHeader=Host: ${OTHER_HOST}`,
      'ls-remote',
      `https://${h}:${p}/trajgate-doctor.git`,
    ],
    verified: (_code, out) => / 421\b/.test(out),
  },
  {
    name: 'node',
    file: process.execPath,
    args: (h, p) => ['-e', NODE, h, String(p)],
    verified: (c, o) => c === 0 && o.startsWith('verified'),
  },
  {
    name: 'python',
    file: 'python3',
    args: (h, p) => ['-c', PYTHON, h, String(p)],
    verified: (c, o) => c === 0 && o.startsWith('verified'),
  },
];

/** Variables the doctor's own environment may hold that would change what a client trusts. */
const OWN =
  /^(https?_proxy|no_proxy|all_proxy|node_extra_ca_certs|ssl_cert_(file|dir)|requests_ca_bundle|curl_ca_bundle|git_ssl_cainfo|node_options)$/i;

function run(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      const missing = err && (err as NodeJS.ErrnoException).code === 'ENOENT';
      resolve({ code, out: missing ? 'not installed' : (stdout + stderr).trim() });
    });
  });
}

/**
 * Each client the README names, given the variables `trajgate env` prints and nothing else of
 * the kind, verifies the gateway's certificate for an intercepted name: a CONNECT through the
 * proxy and a TLS handshake, no request sent on (curl and git's is refused 421 by the gateway).
 */
export async function tlsClients(ctx: DoctorContext): Promise<Check[]> {
  const patterns = ctx.config.tls.intercept;
  if (patterns.length === 0)
    return [
      { check: 'tls', ok: true, detail: 'skipped: tls.intercept is empty, nothing is intercepted' },
    ];
  const { host, port } = interceptedName(parseNetworkPattern(patterns[0] as string));
  const ca = caFiles(ctx.config, undefined, () => undefined) as { cert: string; bundle: string };
  const { proxy, agent } = ctx.who;
  const vars = clientVars({
    proxy,
    bridge: ctx.config.listen.bridge,
    agent: agent && { id: agent.id, token: [{ text: agent.token }] },
    ca,
    sentinels: [],
  });
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !OWN.test(k)));
  const env = {
    ...base,
    GIT_TERMINAL_PROMPT: '0',
    ...Object.fromEntries(
      vars.map(([k, v]) => [k, v.map((p) => ('text' in p ? p.text : '')).join('')]),
    ),
  };
  const checks: Check[] = [];
  for (const c of CLIENTS) {
    const r = await ctx.session.during(() => run(c.file, c.args(host, port), env));
    const check = `tls-${c.name}`;
    if (r.out === 'not installed')
      checks.push({ check, ok: true, detail: `skipped: ${c.file} is not installed` });
    else if (c.verified(r.code ?? -1, r.out))
      checks.push({
        check,
        ok: true,
        detail: `verified the gateway's certificate for ${host}:${port} with ${ca.bundle}`,
      });
    else
      checks.push({
        check,
        ok: false,
        detail: `${c.name} did not verify the gateway's certificate for ${host}:${port} (exit ${r.code}: ${r.out.split('\n').slice(-2).join(' ').slice(0, 300)}); agents given \`trajgate env\`'s variables will refuse it: run trajgate ca init, or check tls.ca (${ctx.config.tls.ca})`,
      });
  }
  await ctx.session.reset();
  return checks;
}
