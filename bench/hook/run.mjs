// What a Claude Code hook costs: `trajgate check --hook claude-code` (run twice per tool call)
// against `node -e 0` (a Node process that does nothing), in the same run, interleaved, so that
// both meet the same machine. The gateway is started as users start it (`npx trajgate start
// --config …`, loopback listeners on port 0, read from its banner), pinned to core 1 when
// taskset exists; the runs happen from core 0. Each check sends a PreToolUse Read of a file in
// the workspace (a new tool_use_id each time) and must exit 0. Timed beside them: the same
// check run as `node bin/trajgate.cjs` (without the V8 flags of the file's #! line), and the
// floor (floor.cjs), the least a Node hook can do: read stdin, POST it with node:http.
//
//   npm run build && node bench/hook/run.mjs [--runs 200] [--warmup 10] [--baseline DIR]
//
// --baseline DIR: a built checkout of another commit (a worktree after `npm run build`), whose
// check is timed too, in the same rounds (the figure for "before").
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { busyBefore, log, pinned, runTmp } from '../run-setup.mjs';
import { pinSelf, sleep } from '../review/gateway.mjs';
import { positiveInt } from '../proxy/procs.mjs';
import { parseArgs } from 'node:util';

const ROOT = join(import.meta.dirname, '../..');
const CLI = join(ROOT, 'bin/trajgate.cjs');
const TOKEN = 'bench-hook-agent-token-0123456789abcdef';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '10' },
    baseline: { type: 'string' },
  },
});
const runs = positiveInt(values, 'runs');
const warmup = positiveInt(values, 'warmup');

const tmp = runTmp('hook');
const workspace = join(tmp, 'workspace');
mkdirSync(join(workspace, 'src'), { recursive: true });
writeFileSync(join(workspace, 'src/app.ts'), 'export {};\n');
const config = join(tmp, 'trajgate.json');
writeFileSync(
  config,
  JSON.stringify({
    version: 1,
    workspace,
    journal: join(tmp, 'data/journal.jsonl'),
    listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    agents: [{ id: 'claude', token: TOKEN }],
  }),
);

/** `npx trajgate start`, in its own process group (on core 1 when pinned): the bridge's URL. */
async function startGateway() {
  const npx = ['npx', ['--no-install', 'trajgate', 'start', '--config', config]];
  const [cmd, args] = pinned ? ['taskset', ['-c', '1', ...npx.flat()]] : npx;
  const child = spawn(cmd, args, {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  process.on('exit', () => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const deadline = Date.now() + 30_000;
  let m;
  while (!(m = /bridge on (http:\/\/127\.0\.0\.1:\d+)\//.exec(stderr))) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`the gateway did not start: ${stderr}`);
    await sleep(20);
  }
  return { bridge: m[1], stop: () => process.kill(-child.pid, 'SIGTERM') };
}

/** Runs a command to its end; its wall time in ms (spawn to exit), its exit code and stderr. */
function timed(cmd, args, { input = '', env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: 'pipe' });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.resume();
    child.once('error', reject);
    child.once('exit', (code) =>
      resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, code, stderr }),
    );
    child.stdin.end(input);
  });
}

let call = 0;
const hookInput = () =>
  JSON.stringify({
    session_id: '2b7c0f4e-5a1d-4e8b-9c3f-6d2a8e1b4f70',
    transcript_path: '/home/dev/.claude/projects/-bench/2b7c0f4e.jsonl',
    cwd: workspace,
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: 'Read',
    tool_input: { file_path: join(workspace, 'src/app.ts') },
    tool_use_id: `toolu_bench_${String(++call).padStart(6, '0')}`,
  });

/** One hook call (`cmd args`, the hook input on stdin); it must be allowed (exit 0). */
async function hook(cmd, args) {
  const r = await timed(cmd, args, {
    input: hookInput(),
    env: { TRAJGATE_AGENT_TOKEN: TOKEN, TRAJGATE_BRIDGE: '' },
  });
  if (r.code !== 0) throw new Error(`${cmd} exited ${r.code}: ${r.stderr}`);
  return r.ms;
}
const check = (cli, bridge) => hook(cli, ['check', '--hook', 'claude-code', '--bridge', bridge]);
const nodeNothing = async () => (await timed(process.execPath, ['-e', '0'])).ms;

const fixed = (ms) => ms.toFixed(0).padStart(4);
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

if (pinned) pinSelf('0');
await busyBefore();
const gateway = await startGateway();
const contenders = [
  { name: 'node -e 0', run: nodeNothing },
  { name: 'trajgate check --hook claude-code (Read)', run: () => check(CLI, gateway.bridge) },
  {
    // The launcher's heap flags make V8 refuse Node's embedded code cache (the flag hash
    // differs), so every built-in module loaded past the startup snapshot compiles from source.
    name: 'the same without the launcher flags',
    run: () =>
      hook(process.execPath, [CLI, 'check', '--hook', 'claude-code', '--bridge', gateway.bridge]),
  },
  {
    name: 'floor: stdin POSTed with node:http',
    run: () => hook(process.execPath, [join(import.meta.dirname, 'floor.cjs'), gateway.bridge]),
  },
];
if (values.baseline !== undefined) {
  // Builds before bin/trajgate.cjs ran dist/cli/main.js as the program.
  const bin = join(values.baseline, 'bin/trajgate.cjs');
  const cli = existsSync(bin) ? bin : join(values.baseline, 'dist/cli/main.js');
  contenders.push({ name: 'check of the --baseline build', run: () => check(cli, gateway.bridge) });
}
try {
  for (let i = 0; i < warmup; i++) for (const c of contenders) await c.run();
  const times = contenders.map(() => []);
  for (let i = 0; i < runs; i++) {
    // Each round starts with the next contender, so that none always follows another.
    for (let j = 0; j < contenders.length; j++) {
      const k = (i + j) % contenders.length;
      times[k].push(await contenders[k].run());
    }
  }
  log(`${runs} runs each, interleaved (after ${warmup} warm-up runs each)`);
  contenders.forEach((c, k) =>
    log(
      `${c.name.padEnd(42)} median ${fixed(quantile(times[k], 0.5))} ms   p90 ${fixed(quantile(times[k], 0.9))} ms`,
    ),
  );
  const [node, ...checks] = times;
  checks.forEach((xs, k) => {
    const ratio = (q) => (quantile(xs, q) / quantile(node, q)).toFixed(2);
    log(`${contenders[k + 1].name} / node -e 0: median ${ratio(0.5)}, p90 ${ratio(0.9)}`);
  });
  log('target: median ratio ≤ 1.5');
} finally {
  gateway.stop();
}
