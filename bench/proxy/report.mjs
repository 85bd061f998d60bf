// Turns run.mjs results into the printed table and the target checks.

/** A figure is usable only if the run behind it had no errors (a fast 403 is not a result). */
function figures(r) {
  if (!r || r.skipped) return {};
  const h = r.http ?? {};
  const clean = h.rps !== undefined && h.non2xx === 0 && h.socketErrors === 0;
  return {
    rps: clean ? h.rps : null,
    p99: clean ? h.p99ms : null,
    tunnel: r.tunnel?.MBps ?? null,
    rssHttp: r.rssAfterHttp?.mb ?? null,
    rss: r.rss?.mb ?? null,
  };
}

function notes(r) {
  if (r.skipped) return r.skipped;
  const out = [];
  if (r.http.error) out.push(`http: ${r.http.error}`);
  if (r.http.non2xx) out.push(`${r.http.non2xx} non-2xx`);
  if (r.http.socketErrors) out.push(`${r.http.socketErrors} socket errors`);
  if (r.tunnel.error) out.push(`tunnel: ${r.tunnel.error}`);
  if (r.rss?.processes > 1) out.push(`RSS summed over ${r.rss.processes} processes`);
  if (r.otherLoad > 0.05) out.push(`other load took ${(r.otherLoad * 100).toFixed(0)}% CPU`);
  return out.join('; ');
}

const fmt = (v, digits) =>
  v === null || v === undefined
    ? '-'
    : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (a, b) => (a == null || b == null ? null : a / b);

export function report(results, meta) {
  const f = Object.fromEntries(Object.entries(results).map(([k, r]) => [k, figures(r)]));
  const rows = [
    ['target', 'req/s', 'p99 ms', 'tunnel MB/s', 'RSS MB after http', 'peak RSS MB', 'notes'],
  ];
  for (const [name, r] of Object.entries(results)) {
    const x = f[name];
    const cells = [
      fmt(x.rps, 0),
      fmt(x.p99, 2),
      fmt(x.tunnel, 0),
      fmt(x.rssHttp, 1),
      fmt(x.rss, 1),
    ];
    rows.push([name, ...cells, notes(r)]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  const table = rows.map((row) =>
    row
      .map((cell, i) =>
        i === 0 || i === row.length - 1 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]),
      )
      .join('  ')
      .trimEnd(),
  );

  const { trajgate: t = {}, floor: fl = {}, squid: s = {}, direct: d = {} } = f;
  const checks = [
    { name: 'trajgate/floor req/s', value: ratio(t.rps, fl.rps), op: '>=', target: 1.0 },
    { name: 'trajgate p99 / floor p99', value: ratio(t.p99, fl.p99), op: '<=', target: 1.2 },
    { name: 'trajgate tunnel / direct', value: ratio(t.tunnel, d.tunnel), op: '>=', target: 0.95 },
    { name: 'trajgate peak RSS MB', value: t.rss ?? null, op: '<=', target: 150 },
    { name: 'squid/floor req/s', value: ratio(s.rps, fl.rps) },
    { name: 'trajgate/squid req/s', value: ratio(t.rps, s.rps) },
  ].map((c) => ({
    ...c,
    met:
      c.target === undefined || c.value === null
        ? null
        : c.op === '>='
          ? c.value >= c.target
          : c.value <= c.target,
  }));
  const lines = checks.map((c) => {
    const goal =
      c.target === undefined
        ? 'info'
        : `target ${c.op === '>=' ? '≥' : '≤'} ${c.target < 10 ? c.target.toFixed(2) : c.target}`;
    const verdict =
      c.met === null ? (c.target === undefined ? '' : 'n/a') : c.met ? 'met' : 'NOT MET';
    return `  ${c.name.padEnd(26)}${fmt(c.value, 2).padStart(8)}   ${goal.padEnd(16)}${verdict}`.trimEnd();
  });

  const text = [
    `${meta.cpu}, ${meta.cores} cores, node ${meta.node}, ${meta.wrk ?? 'wrk ?'}`,
    `pinning: ${meta.pinning}`,
    ...(meta.cpuBusyBefore > 0.1
      ? [
          `warning: CPU was ${(meta.cpuBusyBefore * 100).toFixed(0)}% busy before the run (other load)`,
        ]
      : []),
    `wrk: ${meta.options.connections} connections, ${meta.options.threads} thread(s), ${meta.options.duration} s after ${meta.options.warmup} s warm-up; tunnel: median of ${meta.options.tunnelRuns} × ${meta.options.tunnelBytes / 2 ** 20} MiB`,
    '',
    ...table,
    '',
    'ratios:',
    ...lines,
  ].join('\n');
  return { text, checks };
}
