// The text and the target checks of a bench/state run (figures as run.mjs measured them).

const f = (n, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? '–'
    : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (a, b) => (a && b ? a / b : null);

function throughputRow(name, r) {
  const cell = (x) =>
    x?.error
      ? `error: ${x.error}`
      : `${f(x?.rps)} req/s, ${f(x?.cpuUsPerRequest?.gateways)} + ${f(x?.cpuUsPerRequest?.redis)} µs CPU (p99 ${f(x?.p99ms, 2)} ms${x?.non2xx ? `, ${f(x.non2xx)} non-2xx` : ''}${x?.socketErrors ? `, ${x.socketErrors} socket errors` : ''})`;
  return `| ${name} | ${cell(r.counted)} | ${cell(r.allowlisted)} |`;
}

export function report(results, meta) {
  const { memory, redis, replicas, replicasOneCore } = results;
  const floor = meta.redisFloor;
  const n = meta.options.replicas;
  const lines = [
    `bench/state — ${meta.date}, node ${meta.node}, ${meta.cores} cores; ${meta.pinning}`,
    `options: ${JSON.stringify(meta.options)}; CPU busy before: ${f(meta.cpuBusyBefore * 100)} %`,
    '',
    'Throughput: req/s; CPU per request: trajgate process(es) + redis-server, from /proc.',
    '',
    `host reference: bench/proxy's minimal forwarder under the same load: ${f(results.floor?.rps)} req/s`,
    '',
    '| setup | counted requests (a state change per decision) | allowlisted requests |',
    '| --- | --- | --- |',
    throughputRow('1 process, memory store', memory),
    throughputRow('1 process, Redis', redis),
    throughputRow(`${n} replicas, Redis, all on core 1 (load spread)`, replicasOneCore),
    throughputRow(`${n} replicas, Redis, on cores 0-1 (load spread)`, replicas),
    '',
    '| latency per decision (1 connection, counted) | p50 | p99 |',
    '| --- | --- | --- |',
    ...[
      ['memory', memory.latency],
      ['Redis', redis.latency],
      [`Redis, ${n} replicas on cores 0-1`, replicas.latency],
    ].map(([k, l]) => `| ${k} | ${f(l?.p50ms, 3)} ms | ${f(l?.p99ms, 3)} ms |`),
    `| floor: one Redis GET from core 1 (no trajgate) | ${f(floor?.p50ms, 3)} ms | ${f(floor?.p99ms, 3)} ms |`,
  ];
  const added = {
    p50: redis.latency?.p50ms - memory.latency?.p50ms,
    p99: redis.latency?.p99ms - memory.latency?.p99ms,
  };
  const rate = {
    redisCounted: ratio(redis.counted?.rps, memory.counted?.rps),
    replicasCounted: ratio(replicas.counted?.rps, memory.counted?.rps),
    replicasAllowlisted: ratio(replicas.allowlisted?.rps, memory.allowlisted?.rps),
    replicasVsRedis: ratio(replicas.counted?.rps, redis.counted?.rps),
    oneCoreCounted: ratio(replicasOneCore?.counted?.rps, memory.counted?.rps),
  };
  const pause = replicas.pause;
  const checks = {
    addedP99: { value: added.p99, target: '≤ 0.5 ms', ok: added.p99 <= 0.5 },
    replicasRate: {
      value: rate.replicasCounted,
      target: '≥ 0.8 × 1 process (memory), counted, replicas on cores 0-1',
      ok: rate.replicasCounted >= 0.8,
    },
    pauseP99: {
      value: pause?.clientMs?.p99 ?? null,
      target: '≤ 100 ms',
      ok: (pause?.clientMs?.p99 ?? Infinity) <= 100 && pause?.missed === 0,
    },
  };
  lines.push(
    '',
    '| ratio (same run) | measured | target |',
    '| --- | --- | --- |',
    `| Redis added latency per decision, p50 / p99 | ${f(added.p50, 3)} / ${f(added.p99, 3)} ms | p99 ≤ 0.5 ms ${checks.addedP99.ok ? 'OK' : 'MISSED'} |`,
    `| 1 process Redis / memory, counted req/s | ${f(rate.redisCounted, 2)} | – |`,
    `| ${n} replicas on cores 0-1 / 1 process memory, counted req/s | ${f(rate.replicasCounted, 2)} | ≥ 0.8 ${checks.replicasRate.ok ? 'OK' : 'MISSED'} |`,
    `| ${n} replicas on core 1 / 1 process memory, counted req/s (same CPU budget) | ${f(rate.oneCoreCounted, 2)} | – |`,
    `| ${n} replicas on cores 0-1 / 1 process memory, allowlisted req/s | ${f(rate.replicasAllowlisted, 2)} | – |`,
    `| ${n} replicas on cores 0-1 / 1 process Redis, counted req/s | ${f(rate.replicasVsRedis, 2)} | – |`,
    `| pause propagation (sending A's pausing request → B's tunnel stops relaying), p50 / p99 / max | ${f(pause?.clientMs?.p50, 1)} / ${f(pause?.clientMs?.p99, 1)} / ${f(pause?.clientMs?.max, 1)} ms, ${pause?.missed ?? '–'} of ${pause?.samples ?? '–'} not frozen in 3 s | p99 ≤ 100 ms ${checks.pauseP99.ok ? 'OK' : 'MISSED'} |`,
    `| A's pause record → B's tunnel frozen record (journal ts), p50 / p99 / max | ${f(pause?.journalMs?.p50)} / ${f(pause?.journalMs?.p99)} / ${f(pause?.journalMs?.max)} ms | – |`,
  );
  const store = redis.store?.ops;
  if (store && Object.keys(store).length > 0) {
    const ops = Object.entries(store).map(
      ([op, s]) => `${op} ${f(s.meanMs, 3)} ms (${f(s.count)})`,
    );
    lines.push('', `store ops as trajgate timed them (1 process, Redis; mean): ${ops.join(', ')}`);
  }
  return { text: lines.join('\n'), checks };
}
