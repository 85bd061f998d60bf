#!/usr/bin/env node
// Restart time against journal size: journals of 100 k and 5 M requests (an event and its
// outcome each) written through the real JournalWriter with rotation as a gateway writes them
// (history.mjs), then `trajgate start` timed from spawn to its "proxy listening" line, against
// a start with no history. With rotation a restart reads only the live file (its snapshot and
// the lines after it), so the time stays bounded by `journal.rotate`, not by the history. The
// large history is written on until its live file is nearly full: the worst case. The last
// row, the same kind of history in one file without rotation, shows what rotation bounds.
// Data goes to a temp folder under /tmp, removed at exit (keep bounds it: 20 × rotate).
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../dist/config/load.js';
import { printed, start, stop } from '../proxy/procs.mjs';
import { launcherFlags } from '../proxy/targets.mjs';
import { log, runTmp } from '../run-setup.mjs';
import { writeHistory } from './history.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const main = join(root, 'bin/trajgate.cjs');
const { values } = parseArgs({
  options: {
    small: { type: 'string', default: '100000' },
    large: { type: 'string', default: '5000000' },
    unrotated: { type: 'string', default: '1000000' },
    rotate: { type: 'string', default: '32MB' },
    keep: { type: 'string', default: '20' },
    sessions: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '5' },
  },
});
const runs = Number(values.runs);
const tmp = runTmp('restart');

/** A folder with a config whose journal is `journal` (a YAML flow mapping or path). */
function stage(name, journal) {
  const dir = join(tmp, name);
  mkdirSync(join(dir, 'workspace'), { recursive: true });
  const file = join(dir, 'trajgate.yaml');
  const text = [
    'version: 1',
    `workspace: ${dir}/workspace`,
    `journal: ${journal(join(dir, 'data', 'journal.jsonl'))}`,
    'listen: { proxy: 127.0.0.1:0, admin: 127.0.0.1:0, bridge: 127.0.0.1:0 }',
    'network: { allow: [registry.example.com] }',
    'admin: { token: bench-admin-token-0123456789 }',
  ].join('\n');
  writeFileSync(file, text + '\n');
  return { dir, file, config: parseConfig(text, file, dir) };
}

/** Spawn to "proxy listening", `runs` times (each stopped before the next); the median. */
async function restart(s) {
  const times = [];
  let restored = 0;
  for (let i = 0; i < runs; i++) {
    const began = performance.now();
    const child = start(
      process.execPath,
      [...launcherFlags(main), main, 'start', '--config', s.file],
      {
        cwd: s.dir,
      },
    );
    const ready = await printed(child, /proxy listening on http:\/\/127\.0\.0\.1:\d+/, 120_000);
    const ms = performance.now() - began;
    const said = /\((\d+) records restored/.exec(child.stdoutText + child.stderrTail);
    await stop(child, 30_000);
    if (!ready.match) throw new Error(`trajgate did not start: ${ready.why}`);
    times.push(ms);
    restored = Number(said?.[1] ?? 0);
  }
  times.sort((a, b) => a - b);
  // The fastest shows what a start costs; the median, what other load on the machine added.
  return { ms: times[Math.floor(times.length / 2)], min: times[0], restored };
}

/** Files of the journal and their bytes; the live file's bytes. */
function onDisk(dir) {
  const files = readdirSync(dir).filter((f) => /^journal(\.\d{6})?\.jsonl$/.test(f));
  const size = (f) => statSync(join(dir, f)).size;
  return {
    files: files.length,
    bytes: files.reduce((n, f) => n + size(f), 0),
    live: files.includes('journal.jsonl') ? size('journal.jsonl') : 0,
  };
}

const rotated = (path) => `{ path: ${path}, rotate: ${values.rotate}, keep: ${values.keep} }`;
const count = (n) => (n >= 1e6 ? `${n / 1e6} M` : n >= 1e3 ? `${n / 1e3} k` : `${n}`);
const cases = [
  { name: 'no history', events: 0, journal: rotated },
  { name: `${count(Number(values.small))} events`, events: Number(values.small), journal: rotated },
  {
    name: `${count(Number(values.large))} events, live file full`,
    events: Number(values.large),
    journal: rotated,
    large: true,
  },
  {
    name: `${count(Number(values.unrotated))} events, rotation off`,
    events: Number(values.unrotated),
    journal: (path) => path,
  },
].filter((c) => c.name === 'no history' || c.events > 0);

log(
  `restart vs journal size: rotate ${values.rotate}, keep ${values.keep}, ${values.sessions} sessions, median and fastest of ${runs} starts`,
);
const rows = [];
for (const c of cases) {
  const s = stage(c.name.replace(/\W+/g, '-'), c.journal);
  const t0 = performance.now();
  if (c.events > 0) {
    const wrote = await writeHistory(join(root, 'dist'), s.config, {
      events: c.events,
      sessions: Number(values.sessions),
      fill: c.large === true,
    });
    c.events = wrote.events;
  }
  const wrote = ((performance.now() - t0) / 1000).toFixed(1);
  const disk = onDisk(join(s.dir, 'data'));
  const { ms, min, restored } = await restart(s);
  rows.push({ ...c, ...disk, ms, min, restored });
  log(
    `  ${c.name}: written in ${wrote} s; restart ${ms.toFixed(0)} ms (fastest ${min.toFixed(0)})`,
  );
}

const mb = (n) => (n / 1e6).toFixed(0);
const base = rows[0].ms;
log('');
log(
  '| history | records written | files kept | on disk MB | live file MB | records read at start | restart ms (median) | fastest ms | vs no history |',
);
log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  log(
    `| ${r.name} | ${(r.events * 2).toLocaleString('en')} | ${r.files} | ${mb(r.bytes)} | ${mb(r.live)} | ${r.restored.toLocaleString('en')} | ${r.ms.toFixed(0)} | ${r.min.toFixed(0)} | ${(r.ms / base).toFixed(2)}× |`,
  );
}
const large = rows.find((r) => r.large);
if (large)
  log(
    `\ntarget: restart ≤ 2000 ms at ${large.name}: ${large.ms <= 2000 ? 'met' : 'NOT met'} (${large.ms.toFixed(0)} ms)`,
  );
