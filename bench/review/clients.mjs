// The load: agent sessions sending requests through the proxy, and an operator that polls
// the admin API and approves + resumes (or denies) paused sessions while the load goes on.
import http from 'node:http';
import { sleep } from './gateway.mjs';

/** One request through the proxy in absolute form; resolves { status, body } or { error }. */
function viaProxy(agent, proxyPort, auth, url, timeoutMs) {
  return new Promise((resolve) => {
    const target = new URL(url);
    const req = http.request({
      host: '127.0.0.1',
      port: proxyPort,
      method: 'GET',
      path: url,
      agent,
      headers: { host: target.host, 'proxy-authorization': auth },
      timeout: timeoutMs,
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ error: err.message }));
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', (err) => resolve({ error: err.message }));
    });
    req.end();
  });
}

/**
 * Runs every session until `until` (ms since the epoch). A session sends requests one after
 * the other to the allowlisted upstream; a "drifting" session sends every `everyNth` request to
 * the unapproved one and runs two loops, so requests also arrive while it is paused.
 * Returns every request sent: { url, session, status | error, body kind }; with `record`, hands
 * each to it instead (a long run keeps nothing). `paceMs` spaces each loop's requests.
 */
export async function runAgents({
  agents,
  proxyPort,
  allowedPort,
  otherPort,
  until,
  drifting,
  paceMs = 0,
  record,
}) {
  const sent = [];
  const keep = record ?? ((r) => sent.push(r));
  const loops = [];
  for (const [i, a] of agents.entries()) {
    const drifts = drifting(i);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
    const auth = `Basic ${Buffer.from(`${a.id}:${a.token}`).toString('base64')}`;
    let n = 0;
    const loop = async (lane) => {
      // stagger the starts so the first second is not one burst
      await sleep((i * 7 + lane * 3) % 250);
      while (Date.now() < until) {
        const k = n++;
        const off = drifts && k % 25 === 24;
        const url = off
          ? `http://127.0.0.1:${otherPort}/x/${a.id}/${k}/`
          : `http://127.0.0.1:${allowedPort}/s/${a.id}/${k}/`;
        const t = Date.now();
        const r = await viaProxy(agent, proxyPort, auth, url, 60_000);
        keep({ url, session: a.id, off, ms: Date.now() - t, ...classify(r) });
        if (paceMs > 0) await sleep(Math.min(paceMs - (Date.now() - t), until - Date.now()));
      }
    };
    loops.push(Promise.all(drifts ? [loop(0), loop(1)] : [loop(0)]).finally(() => agent.destroy()));
  }
  await Promise.all(loops);
  return sent;
}

function classify(r) {
  if (r.error) return { error: r.error };
  let end = 'other';
  if (r.status === 200) end = 'sent';
  else if (r.body.includes('An operator reviewed the recent events and denied it')) end = 'denied';
  else if (r.body.includes('No operator decided within the hold time')) end = 'timeout';
  else if (r.body.startsWith('trajgate refused this request')) end = 'review';
  else if (r.body.includes('The gateway is shutting down')) end = 'shutdown';
  return { status: r.status, end };
}

/** A small JSON client of the admin API. */
export function admin(port, token) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  return (method, path, body) =>
    new Promise((resolve, reject) => {
      const text = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          agent,
          timeout: 10_000,
          headers: {
            authorization: `Bearer ${token}`,
            ...(text ? { 'content-type': 'application/json' } : {}),
          },
        },
        (res) => {
          let data = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (data += c));
          res.on('end', () => {
            let json = null;
            try {
              json = JSON.parse(data);
            } catch {
              // metrics text
            }
            resolve({ status: res.statusCode, json, text: data });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.end(text);
    });
}

/**
 * The operator: every `everyMs`, lists the sessions; for each paused one, either denies (every
 * 5th pause; the next poll then resumes it with reset), leaves it alone for `ignoreMs` (every
 * 7th, so its held requests time out), or approves each held unapproved request by its exact
 * URL (ttl 1m) and resumes (with reset every other time). Runs until `stop()`; returns tallies.
 */
export function operator(call, { everyMs = 200, ignoreMs = 3_000 } = {}) {
  const tally = { polls: 0, resumes: 0, denies: 0, ignored: 0, approvals: 0, conflicts: 0 };
  tally.errors = 0;
  const denied = new Set();
  const ignored = new Map();
  let running = true;
  let decisions = 0;
  const act = async (s) => {
    const id = encodeURIComponent(s.id);
    if (denied.has(s.id)) {
      denied.delete(s.id);
      const r = await call('POST', `/api/sessions/${id}/resume`, { reset: true });
      tally[r.status === 200 ? 'resumes' : r.status === 409 ? 'conflicts' : 'errors']++;
      return;
    }
    const until = ignored.get(s.id);
    if (until !== undefined && Date.now() < until) return;
    const turn = decisions++;
    if (turn % 7 === 3 && until === undefined) {
      ignored.set(s.id, Date.now() + ignoreMs);
      tally.ignored++;
      return;
    }
    ignored.delete(s.id);
    if (turn % 5 === 4) {
      const r = await call('POST', `/api/sessions/${id}/deny`, {});
      if (r.status === 200) {
        tally.denies++;
        denied.add(s.id);
      } else tally[r.status === 409 ? 'conflicts' : 'errors']++;
      return;
    }
    const detail = await call('GET', `/api/sessions/${id}`);
    for (const h of detail.json?.heldRequests ?? []) {
      if (!h.what.includes('/x/')) continue;
      const r = await call('POST', `/api/sessions/${id}/approve`, { pattern: h.what, ttl: '1m' });
      tally[r.status === 201 ? 'approvals' : 'errors']++;
    }
    const r = await call('POST', `/api/sessions/${id}/resume`, { reset: turn % 2 === 0 });
    tally[r.status === 200 ? 'resumes' : r.status === 409 ? 'conflicts' : 'errors']++;
  };
  const done = (async () => {
    while (running) {
      const t = Date.now();
      try {
        const list = await call('GET', '/api/sessions');
        tally.polls++;
        const paused = list.json.sessions.filter((s) => s.state === 'paused');
        for (let i = 0; i < paused.length; i += 8)
          await Promise.all(paused.slice(i, i + 8).map(act));
      } catch {
        tally.errors++;
      }
      await sleep(Math.max(0, everyMs - (Date.now() - t)));
    }
  })();
  return {
    tally,
    async stop() {
      running = false;
      await done;
      return tally;
    },
  };
}
