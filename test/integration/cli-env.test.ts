import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import { CLI, runCliAsync } from '../helpers/cli.js';
import { startPorted, writeConfig } from '../helpers/child-gateway.js';
import { readRecords } from '../helpers/gateway.js';
import { startGitServer } from '../helpers/git-http.js';
import { makeLocalCa } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream, TEST_CA_PATH } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * `trajgate env AGENT` against a real gateway: real clients (curl, git, Node's undici, Python's
 * urllib, a JVM, `trajgate check`) given nothing but the printed variables go through trajgate
 * as the agent, plain HTTP and intercepted HTTPS alike, and are journaled as that agent.
 */
const TOKEN_1 = 'agent-1-token-0123456789abcdef';
const TOKEN_2 = 'agent-2-token-fedcba9876543210';
const REPO = join(import.meta.dirname, '../..');

const up = await startUpstream();
const secure = await startUpstream({ tls: true });
const git = await startGitServer();
const ca = makeLocalCa();
const targets = [up.port, secure.port, git.port].map((p) => `127.0.0.1:${p}`);
const { config, gatewayConfig, journal, workspace, proxyPort, bridgePort, gateway } =
  await startPorted(
    {
      agents: [
        { id: 'agent-1', token: '${AGENT_1_TOKEN}' },
        { id: 'agent-2', token: '${AGENT_2_TOKEN}' },
      ],
      network: {
        allow: targets,
        allowPrivate: ['127.0.0.0/8'],
        ports: [80, 443, up.port, secure.port, git.port],
      },
      tls: { intercept: [`127.0.0.1:${secure.port}`], ca: ca.dir, upstreamCa: [TEST_CA_PATH] },
    },
    // The gateway holds every agent's secret; the shells below hold agent-1's at most.
    { AGENT_1_TOKEN: TOKEN_1, AGENT_2_TOKEN: TOKEN_2 },
  );

/** A shell with no proxy or CA variable of the test's own: only what `eval` gives it. */
const bare = {
  PATH: process.env.PATH,
  HOME: tempDir('trajgate-home-'),
  GIT_TERMINAL_PROMPT: '0',
  GIT_CONFIG_NOSYSTEM: '1',
};

function sh(script: string, env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', script], { env, cwd: REPO, timeout: 90_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, out: stdout + stderr });
    });
  });
}

/** Runs `script` after eval of `trajgate env agent-1 --host localhost`, with `vars` set. */
const withEnv = (script: string, extra: NodeJS.ProcessEnv = {}) =>
  sh(`eval "$(node ${CLI} env agent-1 --config ${config} --host localhost)" || exit 9\n${script}`, {
    ...bare,
    ...extra,
  });

const agentEvents = () => readRecords(journal).filter((r): r is EventRecord => r.type === 'event');

/** The event whose target holds `fragment`, once journaled. */
async function journaled(fragment: string): Promise<EventRecord> {
  const find = () => agentEvents().find((r) => r.target.includes(fragment));
  await waitFor(() => find() !== undefined, 10_000, fragment);
  return find() as EventRecord;
}

const NODE_GET = `node --input-type=module -e "
import { EnvHttpProxyAgent, request } from 'undici';
const r = await request(process.argv[1], { dispatcher: new EnvHttpProxyAgent() });
console.log(r.statusCode, (await r.body.text()).length > 0);"`;
const PYTHON_GET = `python3 -c "
import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=60).status)"`;

describe('trajgate env AGENT, eval in sh, real clients through a real gateway', () => {
  it('start says where the rest is', () => {
    expect(gateway.banner).toContain(
      `  \`trajgate env agent-1 --config ${gatewayConfig}\` prints the rest: NO_PROXY, CA trust, JVM flags, TRAJGATE_BRIDGE for hooks\n`,
    );
  });

  it('curl, git clone and ls-remote, Node, Python and trajgate check go through as agent-1', async () => {
    const clone = join(tempDir(), 'clone');
    const r = await withEnv(
      [
        'set -e',
        `curl -sS -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:${up.port}/from-curl`,
        `git clone -q ${git.repoUrl} ${clone}`,
        `git ls-remote ${git.repoUrl}`,
        `${NODE_GET} http://127.0.0.1:${up.port}/from-node`,
        `${PYTHON_GET} http://127.0.0.1:${up.port}/from-python`,
        `node ${CLI} check --kind read --target ${workspace}/notes.txt`,
        'echo "check: $?"',
      ].join('\n'),
      { AGENT_1_TOKEN: TOKEN_1 },
    );
    expect(r.out).toMatch(/^200\n/);
    expect(r.code, r.out).toBe(0);
    expect(readFileSync(join(clone, 'README'), 'utf8')).toBe(git.readme);
    expect(r.out).toMatch(/\trefs\/heads\/main\n/);
    expect(r.out).toContain('200 true\n');
    expect(r.out).toMatch(/\n200\ncheck: 0\n$/);
    for (const fragment of [
      '/from-curl',
      '/repo.git/info/refs',
      '/repo.git/git-upload-pack',
      '/from-python',
      `${workspace}/notes.txt`,
    ]) {
      expect((await journaled(fragment)).session, fragment).toBe('agent-1');
    }
    // undici sends http:// through CONNECT: an allowed host:port is a blind tunnel, one event.
    const tunnel = agentEvents().find((e) => e.target === `127.0.0.1:${up.port}`);
    expect(tunnel?.session).toBe('agent-1');
    expect(up.seen.map((s) => s.url)).toEqual(
      expect.arrayContaining(['/from-curl', '/from-node', '/from-python']),
    );
    // Every event is agent-1's: nothing went direct, nothing went as another session.
    expect(new Set(agentEvents().map((e) => e.session))).toEqual(new Set(['agent-1']));
    expect(up.seen.every((s) => s.headers['proxy-authorization'] === undefined)).toBe(true);
  });

  it('intercepted HTTPS: curl, Node and Python verify trajgate’s certificate with the printed CA files only', async () => {
    const url = `https://127.0.0.1:${secure.port}`;
    const r = await withEnv(
      [
        'set -e',
        `curl -sS -o /dev/null -w '%{http_code}\\n' ${url}/tls-curl`,
        `${NODE_GET} ${url}/tls-node`,
        `${PYTHON_GET} ${url}/tls-python`,
        // Without the CA variables the same curl refuses the intercepted certificate (60).
        `env -u CURL_CA_BUNDLE -u SSL_CERT_FILE curl -sS -o /dev/null ${url}/untrusted || echo "untrusted: $?"`,
      ].join('\n'),
      { AGENT_1_TOKEN: TOKEN_1 },
    );
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/^200\n200 true\n200\n/);
    expect(r.out).toContain('untrusted: 60');
    for (const fragment of ['/tls-curl', '/tls-node', '/tls-python'])
      expect((await journaled(`${url}${fragment}`)).session).toBe('agent-1');
  });

  it('a JVM proxies by JAVA_TOOL_OPTIONS alone, and reaches the bridge directly', async () => {
    // The JDK never proxies a loopback address, whatever the flags: a test cannot send a JVM's
    // traffic to a loopback upstream through trajgate. Its proxy choice is what the flags set.
    const source = join(tempDir(), 'Which.java');
    writeFileSync(
      source,
      `import java.net.*;
public class Which {
  public static void main(String[] urls) {
    for (String u : urls) System.out.println(u + " " + ProxySelector.getDefault().select(URI.create(u)));
    System.out.println("basic " + System.getProperty("jdk.http.auth.tunneling.disabledSchemes").isEmpty());
  }
}
`,
    );
    const bridge = `http://localhost:${bridgePort}/events`;
    const r = await withEnv(
      `java ${source} http://example.org/ https://example.org/ ${bridge} 2>/dev/null`,
      { AGENT_1_TOKEN: TOKEN_1 },
    );
    const via = `[HTTP @ localhost/<unresolved>:${proxyPort}]`;
    expect(r.out).toBe(
      `http://example.org/ ${via}\nhttps://example.org/ ${via}\n${bridge} [DIRECT]\nbasic true\n`,
    );
  });

  it("agent-1's token unset where env runs: printed as ${AGENT_1_TOKEN}, which the agent's shell fills in", async () => {
    const printed = await runCliAsync(
      ['env', 'agent-1', '--config', config, '--host', 'localhost'],
      {
        env: { AGENT_1_TOKEN: undefined, AGENT_2_TOKEN: undefined },
      },
    );
    expect(printed.status, printed.stderr).toBe(0);
    expect(printed.stdout).toContain(
      `export HTTP_PROXY='http://agent-1:'"\${AGENT_1_TOKEN}"'@localhost:${proxyPort}'\n`,
    );
    expect(printed.stdout).toContain(`export TRAJGATE_AGENT_TOKEN="\${AGENT_1_TOKEN}"\n`);
    expect(printed.stderr).toContain('agents[0].token: ${AGENT_1_TOKEN} not set here');
    expect(printed.stdout + printed.stderr).not.toMatch(/placeholder|agent-2|AGENT_2/);
    const r = await sh(
      `eval "$PRINTED"\ncurl -sS -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:${up.port}/filled-in`,
      { ...bare, PRINTED: printed.stdout, AGENT_1_TOKEN: TOKEN_1 },
    );
    expect(r.out).toBe('200\n');
    expect((await journaled('/filled-in')).session).toBe('agent-1');
  });

  it('prints one agent’s secret only, the bundle holds the system roots and the CA', async () => {
    const r = await runCliAsync(
      ['env', 'agent-1', '--config', config, '--host', 'localhost', '--json'],
      {
        env: { AGENT_1_TOKEN: TOKEN_1, AGENT_2_TOKEN: TOKEN_2 },
      },
    );
    expect(r.status, r.stderr).toBe(0);
    const vars = JSON.parse(r.stdout) as Record<string, string>;
    expect(r.stdout).not.toContain(TOKEN_2);
    expect(vars.TRAJGATE_AGENT_TOKEN).toBe(TOKEN_1);
    expect(vars.NO_PROXY).toBe('localhost');
    expect(vars.TRAJGATE_BRIDGE).toBe(`http://localhost:${bridgePort}`);
    expect(vars.NODE_EXTRA_CA_CERTS).toBe(ca.certPath);
    const bundle = readFileSync(vars.SSL_CERT_FILE as string, 'utf8');
    expect(bundle).toContain(ca.pem.trim());
    expect(bundle.split('BEGIN CERTIFICATE').length - 1).toBeGreaterThan(50);
  });
});

describe('trajgate env: what it refuses, and why', () => {
  const refused = async (args: string[], extra: Record<string, unknown>, env = {}) => {
    // Nothing listens: `env` only reads the ports the file names.
    const dir = tempDir();
    const listen = {
      proxy: '127.0.0.1:18080',
      bridge: '127.0.0.1:18081',
      admin: '127.0.0.1:18082',
    };
    const file = writeConfig(dir, {
      version: 1,
      workspace: tempDir('trajgate-ws-'),
      journal: join(dir, 'journal.jsonl'),
      listen,
      ...extra,
    });
    const r = await runCliAsync(['env', ...args, '--config', file], { env });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr.replaceAll(file, 'FILE') };
  };
  const agents = [
    { id: 'agent-1', token: TOKEN_1 },
    { id: 'agent-2', token: TOKEN_2 },
  ];

  it.each([
    [['nobody'], {}, 'trajgate: no agent "nobody" (agents in FILE: agent-1, agent-2)\n'],
    [[], {}, 'trajgate: name the agent: trajgate env AGENT (agents in FILE: agent-1, agent-2)\n'],
    [
      ['agent-1'],
      { listen: { proxy: '0.0.0.0:8080', bridge: '0.0.0.0:8081' } },
      "trajgate: listen.proxy (0.0.0.0:8080) in FILE listens on every address: give --host NAME, the name or address agents reach the gateway at (a compose service name, a VM's address)\n",
    ],
    [
      ['agent-1'],
      { listen: { proxy: '[::]:8080' } },
      'trajgate: listen.proxy ([::]:8080) in FILE listens on every address: give --host NAME',
    ],
    [
      ['agent-1', '--host', 'gw'],
      { listen: { proxy: '127.0.0.1:0' } },
      'trajgate: listen.proxy (127.0.0.1:0) in FILE is port 0, chosen when the gateway starts: give the port in the config\n',
    ],
    [
      ['agent-1', '--host', 'a b'],
      {},
      'trajgate: --host "a b": expected a host name or an IP address\n',
    ],
    [
      ['agent-1', '--format', 'yaml'],
      {},
      'trajgate: --format yaml: expected shell, compose or json (--json is --format json)\n',
    ],
    [
      ['agent-1', '--ca-path', 'ca.pem'],
      {},
      'trajgate: --ca-path ca.pem: expected an absolute path\n',
    ],
  ])('env %j → exit 2 with one line', async (args, listen, message) => {
    const r = await refused(args, { agents, ...listen });
    expect(r.stdout).toBe('');
    expect(r.stderr.startsWith(message), r.stderr).toBe(true);
    expect(r.status).toBe(2);
    expect(r.stderr).not.toContain(TOKEN_1);
  });

  it('interception without a CA says how to make one; with --ca-path it warns and goes on', async () => {
    const certs = join(tempDir(), 'certs');
    const extra = { agents, tls: { intercept: ['example.org'], ca: certs } };
    const none = await refused(['agent-1'], extra);
    expect(none.status).toBe(1);
    expect(none.stderr).toBe(
      `trajgate: no CA in ${certs}: run \`trajgate ca init --dir ${certs}\`\n`,
    );
    const mounted = await refused(['agent-1', '--ca-path', '/etc/trajgate/ca.pem'], extra);
    expect(mounted.status).toBe(0);
    expect(mounted.stdout).toContain("export SSL_CERT_FILE='/etc/trajgate/ca-bundle.pem'\n");
    expect(mounted.stdout).toContain("export NODE_EXTRA_CA_CERTS='/etc/trajgate/ca.pem'\n");
    expect(mounted.stderr).toContain('/etc/trajgate/ca-bundle.pem must exist where the agent runs');
  });
});
