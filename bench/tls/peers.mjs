// The intercepting proxies trajgate is compared with: mitmproxy (mitmdump), Squid with ssl-bump,
// sandbox-runtime's proxy terminating TLS, and the lean floor (trajgate's engine, no policy). Each resolves { child, port, ca } once it listens — `ca` is the certificate the
// load client must trust — or { skipped: message }: a peer that cannot start is reported,
// not fatal. All verify the upstream against the test CA.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, sleep, start, startOnFreePort, which } from '../proxy/procs.mjs';
import { startLeanFloor, startSandboxRuntime, startSquid } from '../proxy/targets.mjs';

/**
 * The lean floor intercepting: trajgate's parser, leaf cache and pooled TLS client with no
 * judgement, journal or flows, on a CA of its own (`trajgate ca init`), so intercepted figures
 * split into the engine's cost and the policy's as bench/proxy's do.
 */
export async function startLeanFloorTls({ tmp, pin, fixtures, root }) {
  const caDir = join(tmp, 'lean-floor-ca');
  const main = join(root, 'bin/trajgate.cjs');
  const init = await run(process.execPath, [main, 'ca', 'init', '--dir', caDir], {
    timeoutMs: 15_000,
  });
  if (init.code !== 0) return { skipped: `ca init failed: ${init.stderr.trim()}` };
  const here = join(root, 'bench/proxy');
  const intercept = { caDir, upstreamCa: join(fixtures, 'ca.pem') };
  const floor = await startLeanFloor({ here, pin, root, intercept });
  return floor.skipped ? floor : { ...floor, ca: join(caDir, 'ca.pem') };
}

/** mitmdump in the foreground; it creates its CA in its temporary confdir. */
export async function startMitmproxy({ tmp, pin, fixtures }) {
  const mitmdump = which('mitmdump');
  if (!mitmdump) return { skipped: 'not installed (apt-get install -y mitmproxy), skipped' };
  const confdir = join(tmp, 'mitmproxy');
  mkdirSync(confdir);
  const args = (port) => [
    '--listen-host',
    '127.0.0.1',
    '--listen-port',
    `${port}`,
    '--set',
    `confdir=${confdir}`,
    '--set',
    `ssl_verify_upstream_trusted_ca=${join(fixtures, 'ca.pem')}`,
    '--set',
    'flow_detail=0',
    '--set',
    'termlog_verbosity=error',
  ];
  // At this log level mitmdump says nothing of the port it listens on: it gets one free a
  // moment ago and counts once it listens there itself (on another if it lost that one).
  const started = await startOnFreePort((port) => start(...pin(1, mitmdump, args(port))), {
    timeoutMs: 20_000,
  });
  if (started.why !== undefined) return { skipped: `not available (${started.why})` };
  const { child, port } = started;
  const ca = join(confdir, 'mitmproxy-ca-cert.pem');
  for (let i = 0; i < 50 && !existsSync(ca); i++) await sleep(100);
  return { child, port, ca };
}

/**
 * sandbox-runtime's HTTP proxy with TLS termination on (`network.tlsTerminate`: its own
 * ephemeral CA, leaves minted per host name), the test CA added to the roots it verifies with.
 */
export const startSandboxRuntimeTls = ({ tmp, pin, fixtures }) =>
  startSandboxRuntime({ tmp, pin, upstreamCa: join(fixtures, 'ca.pem') });

/** Squid's certificate generator helper (package squid-openssl on Debian). */
const certgenPaths = [
  '/usr/lib/squid/security_file_certgen',
  '/usr/lib64/squid/security_file_certgen',
  '/usr/libexec/squid/security_file_certgen',
];

/**
 * Squid with ssl-bump, started by the same starter as bench/proxy's squid (same ACLs, no
 * cache, no access log): a CA of its own made for this run, leaves signed by
 * security_file_certgen helpers (separate processes in squid's process group), every CONNECT
 * bumped, the upstream verified against the test CA.
 */
export async function startSquidBump({ tmp, pin, fixtures }) {
  const certgen = certgenPaths.find((path) => existsSync(path));
  if (!certgen) return { skipped: 'no security_file_certgen (apt-get install -y squid-openssl)' };
  let dir;
  const started = await startSquid({
    tmp,
    pin,
    name: 'squid-bump',
    prepare: async (d) => {
      dir = d;
      await must('openssl', [
        ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2'],
        ...['-subj', '/CN=bench-squid-ca', '-keyout', `${d}/ca.key`, '-out', `${d}/ca.pem`],
        ...['-addext', 'basicConstraints=critical,CA:TRUE'],
        ...['-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
      ]);
      await must(certgen, ['-c', '-s', `${d}/ssl_db`, '-M', '4MB']);
      return [
        `sslcrtd_program ${certgen} -s ${d}/ssl_db -M 4MB`,
        'sslcrtd_children 5 startup=1 idle=1',
        // `bump all` alone bumps at step 1, before squid has seen the upstream: its leaf for
        // an IP literal has no IP subjectAltName and the client refuses it. Staring first
        // bumps at step 3 with a leaf that mimics the upstream's (IP SAN 127.0.0.1 included).
        'acl step1 at_step SslBump1',
        'acl step2 at_step SslBump2',
        'ssl_bump peek step1',
        'ssl_bump stare step2',
        'ssl_bump bump all',
        `tls_outgoing_options cafile=${join(fixtures, 'ca.pem')}`,
        // Squid 5 matches the upstream's name against its CN and DNS names only, never its IP
        // SAN (127.0.0.1): that one error is allowed, the chain is still verified.
        'acl ip_san_only ssl_error SQUID_X509_V_ERR_DOMAIN_MISMATCH',
        'sslproxy_cert_error allow ip_san_only',
        'sslproxy_cert_error deny all',
      ];
    },
    httpPort: (port) =>
      `http_port 127.0.0.1:${port} ssl-bump tls-cert=${dir}/ca.pem tls-key=${dir}/ca.key ` +
      'generate-host-certificates=on dynamic_cert_mem_cache_size=4MB',
  });
  if (started.skipped) return started;
  return { ...started, ca: `${dir}/ca.pem`, helperGroups: () => detached(started.child.pid) };
}

/** Process groups of `pid`'s children that left its group (squid's helpers call setsid). */
function detached(pid) {
  const groups = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [, ppid, pgrp] = stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .map(Number);
      if (ppid === pid && pgrp !== pid) groups.push(pgrp);
    } catch {
      // ended between listing and reading
    }
  }
  return groups;
}

/** Runs `cmd` to completion; throws with its last stderr line unless it exits 0. */
async function must(cmd, args) {
  const r = await run(cmd, args, { timeoutMs: 30_000 });
  if (r.code !== 0)
    throw new Error(`${cmd} exited ${r.code}: ${r.stderr.trim().split('\n').pop() ?? ''}`);
}
