// The fleet's agents: node:http clients of trajgate's proxy (absolute-form GET, keep-alive),
// each from a source address of its own. Without `agents` the client address names the session
// (docs/proxy.md#identity), and Linux binds any address of 127.0.0.0/8 as a source, so one
// loopback host can be many agents.
import http from 'node:http';
import { sleep } from '../proxy/procs.mjs';

/** The source address of session `i` (0 ≤ i < 16.5 M): 127.1.0.0 on, apart from 127.0.0.x. */
export const address = (i) => `127.${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;

/** A keep-alive agent with one socket, bound to `localAddress`: one session's connection. */
export const agentFrom = (localAddress) =>
  new http.Agent({ keepAlive: true, maxSockets: 1, localAddress });

/**
 * One GET of `url` through the proxy on `proxyPort`; resolves { ms, status } or { ms, error }
 * once the whole response is read (or it failed). Bounded by `timeoutMs`.
 */
export function get(agent, proxyPort, url, timeoutMs = 60_000) {
  const began = performance.now();
  const ms = () => performance.now() - began;
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1',
      port: proxyPort,
      path: url,
      agent,
      headers: { host: new URL(url).host },
      timeout: timeoutMs,
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ ms: ms(), error: err.message }));
    req.on('response', (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve({ ms: ms(), status: res.statusCode }));
      res.on('error', (err) => resolve({ ms: ms(), error: err.message }));
    });
    req.end();
  });
}

/**
 * Sessions `from`…`to`-1, each `events` requests one after the other on its own connection,
 * `concurrency` sessions at a time. Resolves { seconds, requests, failed }.
 */
export async function createSessions({ proxyPort, upstream, from, to, events, concurrency }) {
  const began = performance.now();
  let next = from;
  let requests = 0;
  const failed = { count: 0, first: null };
  const worker = async () => {
    while (next < to) {
      const i = next++;
      const agent = agentFrom(address(i));
      for (let k = 0; k < events; k++) {
        const r = await get(agent, proxyPort, `http://127.0.0.1:${upstream}/s/${i}/${k}`);
        requests++;
        if (r.status !== 200 && failed.count++ === 0) failed.first = { session: address(i), ...r };
      }
      agent.destroy();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { seconds: (performance.now() - began) / 1000, requests, failed };
}

/**
 * A steady agent: one request every `everyMs` from `localAddress` (the next one at once when an
 * answer took longer), until `stopped()` says so. Resolves every sample: { at, ms, status |
 * error }, `at` the ms (performance.now) when it was sent.
 */
export async function steady({ proxyPort, upstream, localAddress, everyMs, stopped }) {
  const agent = agentFrom(localAddress);
  const samples = [];
  for (let k = 0; !stopped(); k++) {
    const at = performance.now();
    const r = await get(agent, proxyPort, `http://127.0.0.1:${upstream}/steady/${k}`);
    samples.push({ at, ...r });
    await sleep(Math.max(0, everyMs - (performance.now() - at)));
  }
  agent.destroy();
  return samples;
}

/**
 * Load as fast as it goes: `connections` loops spread over `addresses`, each request after the
 * last, until `stopped()`. Resolves { requests, failed }.
 */
export async function flood({ proxyPort, upstream, addresses, connections, stopped }) {
  let requests = 0;
  const failed = { count: 0, first: null };
  const agents = addresses.map((a) => new http.Agent({ keepAlive: true, localAddress: a }));
  const loop = async (lane) => {
    const agent = agents[lane % agents.length];
    for (let k = 0; !stopped(); k++) {
      const r = await get(agent, proxyPort, `http://127.0.0.1:${upstream}/load/${lane}/${k}`);
      requests++;
      if (r.status !== 200 && failed.count++ === 0) failed.first = r;
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, lane) => loop(lane)));
  for (const a of agents) a.destroy();
  return { requests, failed };
}

/** The `p`-th percentile (0–100) of `values` in ms, by nearest rank; null when empty. */
export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}
