// One guard's decisions per second in a process of its own, with the example config's
// trajectory rules (`example`) or none (`none`), each decision committed as the gateway
// commits it (with its event's seq, kind and target). A fresh process for each, so neither
// inherits the other's compiled code. Usage (from run.mjs): node rules.mjs none|example WS N
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseConfig } from '../../dist/config/load.js';
import { normalizeEvent } from '../../dist/event/normalize.js';
import { compilePolicy } from '../../dist/guard/compile.js';
import { Guard } from '../../dist/guard/guard.js';
import { ALLOW, syntheticEvents } from './events.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const [which, workspace, count] = process.argv.slice(2);
const DECISIONS = Number(count);
const example = parse(readFileSync(join(root, 'config/trajgate.example.yaml'), 'utf8'));
const sequences = which === 'example' ? example.policy.sequences : [];
const text =
  `version: 1\nworkspace: ${workspace}\nnetwork:\n  allow: ${JSON.stringify(ALLOW)}\n` +
  `policy:\n  sequences: ${JSON.stringify(sequences)}\n`;
const guard = new Guard(compilePolicy(parseConfig(text, 'bench', dirname(workspace))));
if (guard.policy.sequences.length !== sequences.length) throw new Error('rules not loaded');
const sample = [...syntheticEvents(100_000, workspace)].map((e, i) =>
  normalizeEvent(e, { session: e.session, source: 'replay', ts: i, workspace }),
);
let seq = 0;
const decide = (e) =>
  guard.commit(e.session, e.ts, guard.inspect(e), { seq: ++seq, kind: e.kind, target: e.target });
for (let i = 0; i < 200_000; i++) decide(sample[i % sample.length]); // warm-up
const t0 = process.hrtime.bigint();
for (let i = 0; i < DECISIONS; i++) decide(sample[i % sample.length]);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
process.stdout.write(`${Math.round(DECISIONS / seconds)}\n`);
