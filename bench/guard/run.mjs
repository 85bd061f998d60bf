// bench/guard: guard decisions per second in-process (against the seed article's guard ported
// to JS, and with the example config's trajectory rules on against none, measured in the same run) and `trajgate replay` over a generated 1,000,000-line file
// (against a read-and-parse floor), with peak RSS to show replay runs in constant memory.
// Usage: npm run build && node bench/guard/run.mjs [--lines 1000000] [--decisions 3000000]
import { spawnSync } from 'node:child_process';
import {
  createWriteStream,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../dist/config/load.js';
import { normalizeEvent } from '../../dist/event/normalize.js';
import { compilePolicy } from '../../dist/guard/compile.js';
import { Guard } from '../../dist/guard/guard.js';
import { ALLOW, syntheticEvents } from './events.mjs';
import { launcherFlags } from '../proxy/targets.mjs';
import { SeedGuard } from './seed-guard.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const { values } = parseArgs({
  options: {
    lines: { type: 'string', default: '1000000' },
    decisions: { type: 'string', default: '3000000' },
  },
});
const LINES = Number(values.lines);
const DECISIONS = Number(values.decisions);

const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'trajgate-bench-')));
const workspace = join(tmp, 'ws');
mkdirSync(join(workspace, 'src'), { recursive: true });
mkdirSync(join(tmp, 'outside'));
const configText = `version: 1\nworkspace: ${workspace}\nnetwork:\n  allow: ${JSON.stringify(ALLOW)}\n`;

function rate(n, ns) {
  return n / (Number(ns) / 1e9);
}
function fmt(n) {
  return Math.round(n).toLocaleString('en');
}

// 1. In-process decisions on pre-normalised events.
const config = parseConfig(configText, 'bench', tmp);
const sample = [...syntheticEvents(100_000, workspace)].map((e, i) =>
  normalizeEvent(e, { session: e.session, source: 'replay', ts: i, workspace }),
);
function timeLoop(inspect) {
  for (let i = 0; i < 200_000; i++) inspect(sample[i % sample.length]); // warm-up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < DECISIONS; i++) inspect(sample[i % sample.length]);
  return rate(DECISIONS, process.hrtime.bigint() - t0);
}
const seed = new SeedGuard(workspace);
const seedRate = timeLoop((e) => seed.inspect(e));
const guard = new Guard(compilePolicy(config));
// A decision and its commit (the gateway commits once the journal line is written).
const decide = (e) => guard.commit(e.session, e.ts, guard.inspect(e));
const guardRate = timeLoop(decide);
// The example config's three trajectory rules on, against none: each in a process of its own,
// twice in turn, the better of each pair kept.
const rulesRun = (which) => {
  const r = spawnSync(
    process.execPath,
    [join(root, 'bench/guard/rules.mjs'), which, workspace, String(DECISIONS)],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`rules.mjs ${which} failed: ${r.stderr}`);
  return Number(r.stdout.trim());
};
let noRulesRate = 0;
let rulesRate = 0;
for (let i = 0; i < 2; i++) {
  noRulesRate = Math.max(noRulesRate, rulesRun('none'));
  rulesRate = Math.max(rulesRate, rulesRun('example'));
}
const raw = [...syntheticEvents(200_000, workspace)];
const t0 = process.hrtime.bigint();
for (const [i, e] of raw.entries()) {
  decide(normalizeEvent(e, { session: e.session, source: 'replay', ts: i, workspace }));
}
const fullRate = rate(raw.length, process.hrtime.bigint() - t0);

// 2. trajgate replay over generated files (1M lines, and a tenth of it to compare memory).
const outDir = join(root, 'bench/out');
mkdirSync(outDir, { recursive: true });
async function generate(lines) {
  const file = join(tmp, `events-${lines}.jsonl`);
  const out = createWriteStream(file);
  for (const e of syntheticEvents(lines, workspace)) {
    if (!out.write(JSON.stringify(e) + '\n')) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  return file;
}
function timed(args) {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['--import', join(root, 'bench/guard/rss.mjs'), ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed: ${r.stderr}`);
  return { seconds, rssMB: Number(/PEAK_RSS_KB=(\d+)/.exec(r.stderr)[1]) / 1024 };
}
const small = await generate(LINES / 10);
const big = await generate(LINES);
const cli = join(root, 'bin/trajgate.cjs');
const floor = timed([join(root, 'bench/guard/read-floor.mjs'), big]);
const configFile = join(tmp, 'config.yaml');
writeFileSync(configFile, configText);
// As the `trajgate` command runs it: with its launcher's Node flags.
const replayBig = timed([...launcherFlags(cli), cli, 'replay', big, '--config', configFile]);
const replaySmall = timed([...launcherFlags(cli), cli, 'replay', small, '--config', configFile]);
rmSync(tmp, { recursive: true, force: true });

const results = {
  decisionsPerSecond: Math.round(guardRate),
  seedGuardPerSecond: Math.round(seedRate),
  decisionsNoRulesPerSecond: Math.round(noRulesRate),
  decisionsExampleRulesPerSecond: Math.round(rulesRate),
  normaliseAndDecidePerSecond: Math.round(fullRate),
  replay1MSeconds: Number(replayBig.seconds.toFixed(2)),
  replayFloorSeconds: Number(floor.seconds.toFixed(2)),
  replayPeakRssMB: Math.round(replayBig.rssMB),
  replayTenthPeakRssMB: Math.round(replaySmall.rssMB),
};
console.log(
  `guard decisions/s (in-process, pre-normalised):  ${fmt(guardRate)}   target ≥ 1,000,000: ${guardRate >= 1e6 ? 'met' : 'NOT met'}`,
);
console.log(
  `seed article guard ported to JS (baseline):      ${fmt(seedRate)}   ratio trajgate/seed: ${(guardRate / seedRate).toFixed(2)}`,
);
console.log(
  `with the example's 3 trajectory rules:           ${fmt(rulesRate)}   none: ${fmt(noRulesRate)}, ratio ${(rulesRate / noRulesRate).toFixed(2)}; target ≥ 1,000,000: ${rulesRate >= 1e6 ? 'met' : 'NOT met'}`,
);
console.log(`normalise + decide per second (paths resolved):  ${fmt(fullRate)}`);
console.log(
  `replay ${fmt(LINES)} lines:  ${replayBig.seconds.toFixed(2)} s   target ≤ 3 s: ${replayBig.seconds <= 3 ? 'met' : 'NOT met'}`,
);
console.log(
  `read + JSON.parse floor:      ${floor.seconds.toFixed(2)} s   ratio replay/floor: ${(replayBig.seconds / floor.seconds).toFixed(2)}`,
);
console.log(
  `replay peak RSS: ${results.replayPeakRssMB} MB for ${fmt(LINES)} lines, ${results.replayTenthPeakRssMB} MB for ${fmt(LINES / 10)} (constant memory: ratio ${(replayBig.rssMB / replaySmall.rssMB).toFixed(2)})`,
);
writeFileSync(join(outDir, 'guard.json'), JSON.stringify(results, null, 2) + '\n');
