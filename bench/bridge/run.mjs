// bench/bridge: MCP tool calls per second straight to the upstream and through trajgate's
// bridge (policy, journal and path resolution on), in one run, for two upstreams: a real MCP
// server (the official SDK, stateless) and a bare JSON answerer (the bridge's own ceiling).
// wrk and the upstream run on core 0, trajgate on core 1.
// Usage: apt-get install -y wrk && npm run build && node bench/bridge/run.mjs [--duration 10]
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launcherFlags } from '../proxy/targets.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '../..');
const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
  },
});
const TOKEN = 'bench-agent-token-0123456789';
const children = new Set();
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

function start(args, core) {
  const child = spawn('taskset', ['-c', String(core), process.execPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function firstLine(child) {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
}

async function waitPort(port) {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((r) => {
      const s = connect(port, '127.0.0.1', () => (s.end(), r(true)));
      s.on('error', () => r(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`port ${port} never opened`);
}

function wrk(url, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'taskset',
      [
        '-c',
        '0',
        'wrk',
        '-t1',
        `-c${values.connections}`,
        `-d${values.duration}s`,
        '--latency',
        '-s',
        join(here, 'call.lua'),
        url,
      ],
      {
        env: { ...process.env, ...env },
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`wrk failed: ${out}`));
      const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
      const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(out);
      const ms = p99 ? Number(p99[1]) * { us: 0.001, ms: 1, s: 1000 }[p99[2]] : NaN;
      resolve({ rps, non2xx, p99ms: ms });
    });
  });
}

const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'trajgate-bridge-bench-')));
const workspace = join(tmp, 'ws');
mkdirSync(workspace);
const target = join(workspace, 'notes.txt');
const results = {};
try {
  for (const [name, script] of [
    ['sdk', 'upstream.mjs'],
    ['echo', 'echo-upstream.mjs'],
  ]) {
    const up = start([join(here, script)], 0);
    const { port } = await firstLine(up);
    const direct = await wrk(`http://127.0.0.1:${port}/mcp`, { TARGET_PATH: target });
    const bridgePort = 20000 + Math.floor(Math.random() * 20000);
    const config = join(tmp, `${name}.yaml`);
    writeFileSync(
      config,
      [
        'version: 1',
        `workspace: ${workspace}`,
        `journal: ${join(tmp, 'data', `${name}-journal.jsonl`)}`,
        `listen: { proxy: "127.0.0.1:0", bridge: "127.0.0.1:${bridgePort}", admin: "127.0.0.1:0" }`,
        `agents: [{ id: agent-1, token: ${TOKEN} }]`,
        `bridge: { upstream: "http://127.0.0.1:${port}/mcp" }`,
      ].join('\n'),
    );
    const main = join(root, 'bin/trajgate.cjs');
    const gw = start([...launcherFlags(main), main, 'start', '--config', config], 1);
    await waitPort(bridgePort);
    await wrk(`http://127.0.0.1:${bridgePort}/mcp`, { TARGET_PATH: target, TOKEN }); // warm-up
    const bridged = await wrk(`http://127.0.0.1:${bridgePort}/mcp`, { TARGET_PATH: target, TOKEN });
    const journal = readFileSync(join(tmp, 'data', `${name}-journal.jsonl`), 'utf8');
    const events = journal.split('\n').filter((l) => l.includes('"type":"event"')).length;
    gw.kill('SIGTERM');
    up.kill('SIGTERM');
    await new Promise((r) => gw.once('exit', r));
    results[name] = { direct, bridged, ratio: bridged.rps / direct.rps, events };
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const fmt = (n) => Math.round(n).toLocaleString('en');
console.log(
  `MCP tools/call (read_text_file, inside the workspace), ${values.connections} connections, ${values.duration} s`,
);
console.log(
  'upstream                         direct calls/s  p99 ms   via bridge calls/s  p99 ms   ratio',
);
for (const [name, r] of Object.entries(results)) {
  const label = name === 'sdk' ? 'official SDK MCP server' : 'bare JSON answerer (ceiling)';
  console.log(
    `${label.padEnd(32)} ${fmt(r.direct.rps).padStart(14)}  ${r.direct.p99ms.toFixed(2).padStart(6)}   ${fmt(r.bridged.rps).padStart(18)}  ${r.bridged.p99ms.toFixed(2).padStart(6)}   ${r.ratio.toFixed(2)}`,
  );
  if (r.direct.non2xx || r.bridged.non2xx)
    console.log(`  non-2xx: direct ${r.direct.non2xx}, bridge ${r.bridged.non2xx}`);
}
console.log(
  `target: bridge ≥ 0.8 × direct for the real MCP server: ${results.sdk.ratio >= 0.8 ? 'met' : 'NOT met'}`,
);
mkdirSync(join(root, 'bench/out'), { recursive: true });
writeFileSync(join(root, 'bench/out/bridge.json'), JSON.stringify(results, null, 2) + '\n');
