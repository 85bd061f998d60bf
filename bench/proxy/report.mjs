// Turns run.mjs results into the printed table and the target checks.

const MODES = { keepAlive: 'keep-alive', newConnection: 'new-conn' };

/**
 * Why a wrk run's figures are not usable (a fast 403 is not a result); none: usable. Running
 * out of ephemeral ports shows as connect errors.
 */
function flaws(h) {
  if (!h) return [];
  if (h.error) return [h.error];
  const out = [];
  if (h.non2xx) out.push(`${h.non2xx} non-2xx`);
  if (h.socketErrors) out.push(`${h.socketErrors} socket errors`);
  if (h.closes !== undefined && h.closes < h.requests)
    out.push(`only ${h.closes} of ${h.requests} responses closed: connections reused`);
  return out;
}

/** A figure is usable only if the run behind it had no errors. */
function figures(r) {
  if (!r || r.skipped) return {};
  const http = (h) =>
    h && flaws(h).length === 0 ? { rps: h.rps, p99: h.p99ms, cpu: h.cpuUsPerRequest } : {};
  return {
    ka: http(r.keepAlive),
    nc: http(r.newConnection),
    tunnel: r.tunnel?.MBps ?? null,
    socks: r.socksTunnel?.MBps ?? null,
    rssHttp: r.rssAfterHttp?.mb ?? null,
    rss: r.rss?.mb ?? null,
  };
}

function notes(r) {
  if (r.skipped) return r.skipped;
  const out = [];
  for (const [mode, label] of Object.entries(MODES))
    for (const flaw of flaws(r[mode])) out.push(`${label}: ${flaw}`);
  if (r.tunnel.error) out.push(`tunnel: ${r.tunnel.error}`);
  if (r.socksTunnel?.error) out.push(`SOCKS5 tunnel: ${r.socksTunnel.error}`);
  if (r.rss?.processes > 1) out.push(`RSS summed over ${r.rss.processes} processes`);
  if (r.otherLoad > 0.05) out.push(`other load took ${(r.otherLoad * 100).toFixed(0)}% CPU`);
  return out.join('; ');
}

/**
 * The new-connection mode's port use: closes by wrk leave its ephemeral ports in TIME_WAIT for
 * 60 s, which connect() reuses only with tcp_tw_reuse 1 (any traffic) or 2 (loopback: the default).
 */
function tcpLine(results, { ephemeralPorts, twReuse }) {
  const peak = Math.max(
    0,
    ...Object.values(results).map((r) => r.newConnection?.clientTimeWait ?? 0),
  );
  return (
    `tcp: ${ephemeralPorts} ephemeral ports, tcp_tw_reuse ${twReuse}; new-conn: at most ${peak} client ports in TIME_WAIT after a run` +
    (twReuse === 0
      ? '; warning: without tcp_tw_reuse the ports run out (sysctl -w net.ipv4.tcp_tw_reuse=2)'
      : '')
  );
}

export const fmt = (v, digits) =>
  v === null || v === undefined
    ? '-'
    : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (a, b) => (a == null || b == null ? null : a / b);

/** Rows of cells as aligned lines: the first and last column left, the figures right. */
export function alignTable(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  return rows.map((row) =>
    row
      .map((cell, i) =>
        i === 0 || i === row.length - 1 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]),
      )
      .join('  ')
      .trimEnd(),
  );
}

export function report(results, meta) {
  const f = Object.fromEntries(Object.entries(results).map(([k, r]) => [k, figures(r)]));
  const head = [
    'target',
    'ka req/s',
    'ka p99 ms',
    'ka µs CPU/req',
    'nc req/s',
    'nc p99 ms',
    'nc µs CPU/req',
    'tunnel MB/s',
    'SOCKS5 MB/s',
  ];
  const rows = [[...head, 'RSS MB after http', 'peak RSS MB', 'notes']];
  for (const [name, r] of Object.entries(results)) {
    const x = f[name];
    const cells = [
      fmt(x.ka?.rps, 0),
      fmt(x.ka?.p99, 2),
      fmt(x.ka?.cpu, 0),
      fmt(x.nc?.rps, 0),
      fmt(x.nc?.p99, 2),
      fmt(x.nc?.cpu, 0),
      fmt(x.tunnel, 0),
      fmt(x.socks, 0),
      fmt(x.rssHttp, 1),
      fmt(x.rss, 1),
    ];
    rows.push([name, ...cells, notes(r)]);
  }
  const table = alignTable(rows);

  // A target skipped (not installed, not available) has no figures: its ratios are null.
  const measured = (x) => ({ ...x, ka: x?.ka ?? {}, nc: x?.nc ?? {} });
  const [t, fl, s, d, sr, lf] = [
    f.trajgate,
    f.floor,
    f.squid,
    f.direct,
    f['sandbox-runtime'],
    f['lean-floor'],
  ].map(measured);
  // `--baseline DIR`: the same trajgate figures for another checkout, measured in this run.
  const b = f.baseline;
  const before = b
    ? [
        ['trajgate/baseline keep-alive req/s', ratio(t.ka.rps, b.ka?.rps)],
        ['trajgate/baseline keep-alive p99', ratio(t.ka.p99, b.ka?.p99)],
        ['trajgate/baseline keep-alive CPU/request', ratio(t.ka.cpu, b.ka?.cpu)],
        ['trajgate/baseline new-conn req/s', ratio(t.nc.rps, b.nc?.rps)],
        ['trajgate/baseline new-conn p99', ratio(t.nc.p99, b.nc?.p99)],
        ['trajgate/baseline new-conn CPU/request', ratio(t.nc.cpu, b.nc?.cpu)],
        ['trajgate/baseline tunnel', ratio(t.tunnel, b.tunnel)],
        ['trajgate/baseline peak RSS', ratio(t.rss, b.rss)],
      ]
    : [];
  const checks = [
    ...before,
    ['trajgate/squid new-conn req/s', ratio(t.nc.rps, s.nc.rps), '>=', 1.0],
    ['trajgate/squid keep-alive req/s', ratio(t.ka.rps, s.ka.rps), '>=', 1.2],
    ['trajgate/squid keep-alive p99', ratio(t.ka.p99, s.ka.p99), '<=', 1.0],
    ['trajgate/floor peak RSS', ratio(t.rss, fl.rss), '<=', 1.0],
    ['trajgate/direct tunnel', ratio(t.tunnel, d.tunnel), '>=', 0.95],
    ['trajgate SOCKS5/direct tunnel', ratio(t.socks, d.tunnel)],
    ['trajgate SOCKS5/CONNECT tunnel', ratio(t.socks, t.tunnel)],
    ['trajgate/floor keep-alive req/s', ratio(t.ka.rps, fl.ka.rps)],
    ['trajgate/floor new-conn req/s', ratio(t.nc.rps, fl.nc.rps)],
    ['squid/floor keep-alive req/s', ratio(s.ka.rps, fl.ka.rps)],
    ['squid/floor new-conn req/s', ratio(s.nc.rps, fl.nc.rps)],
    ['trajgate/squid new-conn p99', ratio(t.nc.p99, s.nc.p99)],
    // The lean engine with no policy: what is the engine's, what is trajgate's own work.
    ['lean-floor/squid keep-alive req/s', ratio(lf.ka.rps, s.ka.rps)],
    ['lean-floor/squid new-conn req/s', ratio(lf.nc.rps, s.nc.rps)],
    ['trajgate/lean-floor keep-alive req/s', ratio(t.ka.rps, lf.ka.rps)],
    ['trajgate/lean-floor new-conn req/s', ratio(t.nc.rps, lf.nc.rps)],
    ['trajgate/lean-floor keep-alive CPU/request', ratio(t.ka.cpu, lf.ka.cpu)],
    // sandbox-runtime's proxy: trajgate 3× better on each figure (p99 and RSS: theirs/ours).
    ['trajgate/sandbox-runtime keep-alive req/s', ratio(t.ka.rps, sr.ka.rps), '>=', 3.0],
    ['trajgate/sandbox-runtime new-conn req/s', ratio(t.nc.rps, sr.nc.rps), '>=', 3.0],
    ['sandbox-runtime/trajgate keep-alive p99', ratio(sr.ka.p99, t.ka.p99), '>=', 3.0],
    ['sandbox-runtime/trajgate new-conn p99', ratio(sr.nc.p99, t.nc.p99), '>=', 3.0],
    ['sandbox-runtime/trajgate peak RSS', ratio(sr.rss, t.rss), '>=', 3.0],
    ['trajgate/sandbox-runtime tunnel', ratio(t.tunnel, sr.tunnel)],
  ].map(([name, value, op, target]) => ({
    name,
    value,
    op,
    target,
    met:
      target === undefined || value === null
        ? null
        : op === '>='
          ? value >= target
          : value <= target,
  }));
  const lines = checks.map((c) => {
    const goal =
      c.target === undefined
        ? 'info'
        : `target ${c.op === '>=' ? '≥' : '≤'} ${c.target.toFixed(2)}`;
    const verdict =
      c.met === null ? (c.target === undefined ? '' : 'n/a') : c.met ? 'met' : 'NOT MET';
    return `  ${c.name.padEnd(44)}${fmt(c.value, 2).padStart(8)}   ${goal.padEnd(16)}${verdict}`.trimEnd();
  });

  const o = meta.options;
  const text = [
    `${meta.cpu}, ${meta.cores} cores, node ${meta.node}, ${meta.wrk ?? 'wrk ?'}` +
      (meta.sandboxRuntime ? `, sandbox-runtime ${meta.sandboxRuntime}` : ''),
    `pinning: ${meta.pinning}`,
    tcpLine(results, meta.tcp),
    ...(meta.cpuBusyBefore > 0.1
      ? [
          `warning: CPU was ${(meta.cpuBusyBefore * 100).toFixed(0)}% busy before the run (other load)`,
        ]
      : []),
    (o.tunnelOnly
      ? 'wrk: not run (--tunnel-only)'
      : `wrk: ${o.connections} connections, ${o.threads} thread(s), ${o.duration} s after ${o.warmup} s warm-up, ` +
        'ka = keep-alive, nc = new connection per request') +
      `; tunnel: median of ${o.tunnelRuns} × ${o.tunnelBytes / 2 ** 20} MiB (trajgate: CONNECT and SOCKS5 pushes alternated)`,
    '',
    ...table,
    '',
    'ratios:',
    ...lines,
  ].join('\n');
  return { text, checks };
}
