// trajgate's own view of its store for bench/state/run.mjs: the mean of each Redis operation
// from /metrics (`trajgate_store_seconds` histogram by op), or null without one (memory).
import http from 'node:http';
import { ADMIN_TOKEN } from './targets.mjs';

function scrape(port) {
  return new Promise((resolve) => {
    const req = http.get(
      {
        host: '127.0.0.1',
        port,
        path: '/metrics',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        timeout: 5000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve(res.statusCode === 200 ? text : ''));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve(''));
  });
}

/** { op: { count, meanMs } } from the admin listener on `port`, or null. */
export async function storeMetrics(port) {
  const text = await scrape(port);
  const ops = {};
  const re = /^trajgate_store_seconds_(sum|count)\{[^}]*op="([^"]+)"[^}]*\} ([\d.e+-]+)$/gm;
  for (const [, field, op, value] of text.matchAll(re)) (ops[op] ??= {})[field] = Number(value);
  const out = {};
  for (const [op, { sum, count }] of Object.entries(ops)) {
    if (count > 0) out[op] = { count, meanMs: Number(((sum / count) * 1000).toFixed(3)) };
  }
  const errors = [...text.matchAll(/^trajgate_store_errors_total(?:\{[^}]*\})? ([\d.e+-]+)$/gm)];
  if (Object.keys(out).length === 0 && errors.length === 0) return null;
  return { ops: out, errors: errors.reduce((a, m) => a + Number(m[1]), 0) };
}
