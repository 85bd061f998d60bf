// The fleet bench's summary: one markdown table of its figures, each with its target where
// there is one (an event-loop block of at most 50 ms at a rotation; the page costing an agent
// at most 1.2× its p99).

const n = (x, digits = 0) =>
  x === null || x === undefined
    ? '–'
    : Number(x).toLocaleString('en', {
        minimumFractionDigits: digits,
        maximumFractionDigits: digits,
      });
const MB = (bytes) => n(bytes / 1e6, 1);
const verdict = (met) => (met ? 'met' : '**missed**');

/** The table (markdown) for `results` of a run described by `meta`. */
export function report(results, meta) {
  const { sessions: s, api, agent, rotation: r, snapshot, journal, restart } = results;
  const lag = r.eventLoopMaxMs;
  const c = s.whileCreating;
  const blocks = (l) => l.perRotation.map((ms) => n(ms)).join(', ') || 'none';
  const rows = [
    [
      'sessions created (3 requests each, one client address each)',
      `${n(meta.options.sessions)} in ${n(s.seconds, 1)} s (${n(s.perSecond)}/s; ${n(s.failed.count)} failed; ${n(s.listed)} listed)`,
      '',
    ],
    [
      'rotations while creating them: event-loop block near each (ms)',
      `${c.rotations}: ${blocks(c.eventLoopMaxMs)} (away from rotations: ${n(c.eventLoopMaxMs.away)} ms)`,
      '',
    ],
    [
      'probe agent while creating them: worst near a rotation',
      `${n(c.probe.maxNearRotation, 1)} ms (away: ${n(c.probe.maxAway, 1)} ms; p50 ${n(c.probe.p50, 1)}, p99 ${n(c.probe.p99, 1)} ms)`,
      '',
    ],
    ['gateway RSS idle → after', `${n(s.rssIdleMB, 1)} → ${n(s.rssAfterMB, 1)} MB`, ''],
    ['RSS per session', `${n(s.rssPerSessionKB, 2)} KB`, ''],
    [
      `\`GET /api/sessions?limit=100\`, ${api.calls} calls`,
      `p50 ${n(api.p50, 1)} ms, p99 ${n(api.p99, 1)} ms, max ${n(api.max, 1)} ms (event loop's longest delay meanwhile ${n(api.eventLoopMaxMs)} ms)`,
      '',
    ],
    [
      `rotations (\`rotate: ${meta.options.rotate}\`) under load`,
      `${r.rotations} in ${n(r.seconds, 1)} s (${n(r.loadRequests)} requests, ${n(r.loadFailed.count)} failed)`,
      `${meta.options.rotations}`,
    ],
    [
      'largest event-loop block within 1 s of a rotation (`nodejs_eventloop_lag_max_seconds`)',
      `${n(lag.nearRotation)} ms (each: ${blocks(lag)}; away from rotations: ${n(lag.away)} ms)`,
      `≤ 50 ms: ${verdict(lag.nearRotation <= 50)}`,
    ],
    [
      'probe agent (a request every 10 ms): worst near a rotation',
      `${n(r.probe.maxNearRotation, 1)} ms (away: ${n(r.probe.maxAway, 1)} ms; p50 ${n(r.probe.p50, 1)}, p99 ${n(r.probe.p99, 1)} ms)`,
      '',
    ],
    [
      'snapshot at the head of the live file',
      `${MB(snapshot.bytes)} MB (${snapshot.lines} line(s))`,
      '',
    ],
    [
      `journal on disk (\`keep: ${meta.options.keep}\`)`,
      `${journal.files} files, ${MB(journal.bytes)} MB, largest ${MB(journal.largest)} MB`,
      `\`(rotate + snapshot) × (keep + 1)\` = ${MB(journal.sizingRule)} MB: ${verdict(journal.bytes <= journal.sizingRule)}`,
    ],
    [
      'major GCs in the run, before the restart (`nodejs_gc_duration_seconds`)',
      `${n(results.gc.count)}, ${n(results.gc.seconds, 1)} s in all; ${n(results.gc.over100ms)} over 100 ms, ${n(results.gc.over1s)} over 1 s`,
      '',
    ],
    ['stop (SIGTERM to exit)', `${n(restart.stop.ms)} ms (exit ${restart.stop.code})`, ''],
    [
      'restart (spawn to `/api/health` 200)',
      `${n(restart.readyMs)} ms (${n(restart.sessionsListed)} sessions listed, RSS ${n(restart.rssMB, 1)} MB)`,
      '',
    ],
    [
      `agent p99 at ${agent.rate} req/s, review page closed`,
      `${n(agent.without.p99, 1)} ms (p50 ${n(agent.without.p50, 1)}, max ${n(agent.without.max, 1)}; straight to the upstream: p99 ${n(agent.without.directP99, 1)} ms)`,
      '',
    ],
    [
      `agent p99 at ${agent.rate} req/s, review page open`,
      `${n(agent.with.p99, 1)} ms (p50 ${n(agent.with.p50, 1)}, max ${n(agent.with.max, 1)}; straight to the upstream: p99 ${n(agent.with.directP99, 1)} ms)`,
      '',
    ],
    [
      'agent p99, page open / closed',
      `${n(agent.ratio, 2)}×`,
      `≤ 1.2×: ${verdict(agent.ratio <= 1.2)}`,
    ],
  ];
  const lines = [
    `fleet: ${n(meta.options.sessions)} sessions; ${meta.pinning}; load average ${n(meta.loadAverage.before, 1)} before, ${n(meta.loadAverage.after, 1)} after`,
    '',
    '| figure | measured | target |',
    '| --- | --- | --- |',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ];
  return lines.join('\n');
}
