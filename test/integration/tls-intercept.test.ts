import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CapturedExchange, CapturedPart } from '../../src/action/capture.js';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';
import { exportHar } from '../helpers/cli.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import {
  handshakeThrough,
  interceptPerTest,
  makeLocalCa,
  refusals,
  runNode,
} from '../helpers/tls.js';
import { startUpstream, TEST_CA_PATH } from '../helpers/upstream.js';
import { outcomeOf, waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * TLS interception end to end with real clients (curl, undici's ProxyAgent and node:https in
 * child processes trusting the trajgate CA through NODE_EXTRA_CA_CERTS) against loopback HTTPS
 * upstreams whose certificates come from the test CA under test/fixtures/tls. `up` is
 * intercepted; `blind` is allowed but not intercepted; `plain` is plain HTTP.
 */
const ca = makeLocalCa();
const up = await startUpstream({ tls: true });
const blind = await startUpstream({ tls: true });
const plain = await startUpstream();
const UP = `127.0.0.1:${up.port}`;
const ORIGIN = `https://${UP}`;
const SESSION = '127.0.0.1';

/** A gateway intercepting `up`; GET anywhere on it, POST only under /upload; `blind` allowed. */
const start = interceptPerTest({
  ca,
  intercept: [UP],
  allow: [
    `GET ${ORIGIN}/`,
    `POST ${ORIGIN}/upload`,
    `127.0.0.1:${blind.port}`,
    `http://127.0.0.1:${plain.port}/`,
  ],
  ports: [up.port, blind.port, plain.port],
  policy: { pause: 'block' },
});

const trusted = (g: TestGateway) => ['--cacert', ca.certPath, '-x', g.proxyUrl];
const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');
const outcomes = (g: TestGateway) =>
  g.records().filter((r): r is OutcomeRecord => r.type === 'outcome');

describe('curl --cacert <trajgate CA> through the proxy', () => {
  it('GET is allowed and forwarded; the event has the full URL and method', async () => {
    const g = await start();
    const seen = up.seen.length;
    const res = await curl([...trusted(g), `${ORIGIN}/get?q=1`]);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ method: 'GET', url: '/get?q=1' });
    expect(up.seen.length).toBe(seen + 1);
    const [event] = events(g);
    await waitForRecords(g, outcomeOf(event?.seq));
    expect(event).toMatchObject({
      session: SESSION,
      kind: 'network',
      target: `${ORIGIN}/get?q=1`,
      method: 'GET',
      verdict: 'ALLOW',
      approvedBy: `GET ${ORIGIN}/`,
    });
    expect(outcomes(g)).toEqual([expect.objectContaining({ rid: event?.seq, status: 200 })]);
  });

  it('the agent sees a trajgate leaf for the CONNECT host, the upstream never sees trajgate', async () => {
    const g = await start();
    const hs = await handshakeThrough(g.gw.proxy.port, UP, { ca: ca.pem });
    expect(hs.ok).toBe(true);
    if (!hs.ok) return;
    hs.socket.end();
    expect(hs.cert.issuer.CN).toBe('trajgate local CA');
    expect(hs.cert.subjectaltname).toBe('IP Address:127.0.0.1');
  });

  it('POST to the same host outside the allowed path: 403 REVIEW with the verdict header, not sent', async () => {
    const g = await start();
    const seen = up.seen.length;
    const res = await curl([...trusted(g), '-d', 'x=1', `${ORIGIN}/admin/delete`]);
    expect(res.status).toBe(403);
    expect(res.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(res.body).toContain(`trajgate refused this request: POST ${ORIGIN}/admin/delete`);
    expect(up.seen.length).toBe(seen);
    expect(events(g)).toEqual([
      expect.objectContaining({
        target: `${ORIGIN}/admin/delete`,
        method: 'POST',
        verdict: 'REVIEW',
        boundary: 'network',
      }),
    ]);
  });

  it('a POST under the allowed path prefix goes through with its body', async () => {
    const g = await start();
    const res = await curl([...trusted(g), '--data-binary', 'payload', `${ORIGIN}/upload/a`]);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({
      method: 'POST',
      url: '/upload/a',
      body: 'payload',
    });
  });

  it('several requests on one kept-alive tunnel are each judged', async () => {
    const g = await start();
    const res = await curl([
      ...trusted(g),
      `${ORIGIN}/one`,
      '--next',
      ...trusted(g),
      '-X',
      'DELETE',
      `${ORIGIN}/two`,
    ]);
    expect(res.exitCode).toBe(0);
    expect(events(g).map((e) => [e.method, e.target, e.verdict])).toEqual([
      ['GET', `${ORIGIN}/one`, 'ALLOW'],
      ['DELETE', `${ORIGIN}/two`, 'REVIEW'],
    ]);
  });

  it('a client that does not trust the CA fails its handshake cleanly; it is journaled; the gateway keeps serving', async () => {
    const g = await start();
    const seen = up.seen.length;
    const untrusting = await curl(['-x', g.proxyUrl, `${ORIGIN}/get`]);
    expect(untrusting.exitCode).toBe(60); // CURLE_PEER_FAILED_VERIFICATION
    expect(untrusting.stderr).toMatch(/certificate/i);
    await waitFor(() => refusals(g.records()).length === 1);
    expect(refusals(g.records())[0]).toMatchObject({
      session: SESSION,
      target: UP,
      reason: expect.stringMatching(/^TLS handshake with the agent failed: .*unknown ca/),
      handshake: 'unknown_ca',
    });
    expect(events(g)).toEqual([]);
    expect(up.seen.length).toBe(seen);
    const after = await curl([...trusted(g), `${ORIGIN}/after`]);
    expect(after.status).toBe(200);
  });

  it('SNI other than the CONNECT host (curl --connect-to): handshake refused, journaled, nothing sent', async () => {
    const g = await start();
    const seen = up.seen.length;
    // CONNECT 127.0.0.1:port, but SNI and Host say localhost.
    const res = await curl([
      ...trusted(g),
      '--connect-to',
      `localhost:${up.port}:127.0.0.1:${up.port}`,
      `https://localhost:${up.port}/get`,
    ]);
    expect(res.exitCode).toBe(35); // CURLE_SSL_CONNECT_ERROR
    await waitFor(() => refusals(g.records()).length === 1);
    expect(refusals(g.records())[0]).toMatchObject({
      target: UP,
      reason: `TLS handshake with the agent failed: SNI "localhost" does not match the CONNECT host 127.0.0.1`,
    });
    // trajgate refused it, not the agent: no `handshake`, nothing about trusting the CA.
    expect(refusals(g.records())[0]?.handshake).toBeUndefined();
    expect(up.seen.length).toBe(seen);
    expect(events(g)).toEqual([]);
  });

  it('Host header other than the CONNECT authority: 421, journaled, nothing sent', async () => {
    const g = await start();
    const seen = up.seen.length;
    const res = await curl([
      ...trusted(g),
      '--http1.1',
      '-H',
      'Host: other.example',
      `${ORIGIN}/get`,
    ]);
    expect(res.status).toBe(421);
    expect(res.body).toMatch(/^trajgate: Host "other.example" and target "\/get" do not match/);
    expect(up.seen.length).toBe(seen);
    expect(refusals(g.records())).toEqual([
      expect.objectContaining({ status: 421, target: '/get', session: SESSION }),
    ]);
    expect(events(g)).toEqual([]);
  });

  it('a host that is not intercepted stays a blind tunnel: the upstream’s own certificate, one CONNECT event', async () => {
    const g = await start();
    const res = await curl(['--cacert', TEST_CA_PATH, '-x', g.proxyUrl, `${blind.url}/secret`]);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).url).toBe('/secret');
    const hs = await handshakeThrough(g.gw.proxy.port, `127.0.0.1:${blind.port}`, {
      ca: readFileSync(TEST_CA_PATH),
    });
    expect(hs.ok && hs.cert.issuer.CN).toBe('trajgate test CA');
    if (hs.ok) hs.socket.end();
    await waitFor(() => outcomes(g).length === 2);
    const all = events(g);
    expect(all.map((e) => e.target)).toEqual([
      `127.0.0.1:${blind.port}`,
      `127.0.0.1:${blind.port}`,
    ]);
    expect(all.every((e) => e.verdict === 'ALLOW')).toBe(true);
    // The path is never seen, only bytes.
    expect(JSON.stringify(g.records())).not.toContain('/secret');
    expect(outcomes(g)[0]).toMatchObject({ status: 200 });
    expect(outcomes(g)[0]?.bytesDown).toBeGreaterThan(1000);
  });
});

/** A client script for a child node: undici's ProxyAgent, one request per step. */
const UNDICI_CLIENT = `
import { ProxyAgent, request } from 'undici';
const dispatcher = new ProxyAgent({ uri: process.env.PROXY });
const out = [];
for (const [method, url, body] of JSON.parse(process.env.STEPS)) {
  try {
    const r = await request(url, { dispatcher, method, body });
    out.push({ status: r.statusCode, verdict: r.headers['x-trajgate-verdict'] ?? null, body: await r.body.text() });
  } catch (e) {
    out.push({ error: e.code ?? e.cause?.code ?? e.message });
  }
}
await dispatcher.close();
console.log(JSON.stringify(out));
`;

/** node:https over a tunnel opened by hand with http.request CONNECT. */
const HTTPS_CLIENT = `
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
const proxy = new URL(process.env.PROXY);
const target = new URL(process.env.URL);
const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: target.host });
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) { console.log(JSON.stringify({ connect: res.statusCode })); process.exit(0); }
  const r = https.request(target, {
    createConnection: () => tls.connect({ socket, host: target.hostname }),
  }, (response) => {
    let body = '';
    response.on('data', (d) => (body += d));
    response.on('end', () => { console.log(JSON.stringify({ status: response.statusCode, body })); socket.destroy(); });
  });
  r.on('error', (e) => { console.log(JSON.stringify({ error: e.code ?? e.message })); socket.destroy(); });
  r.end();
});
req.on('error', (e) => console.log(JSON.stringify({ error: e.code ?? e.message })));
req.end();
`;

function parseLast<T>(stdout: string): T {
  const lines = stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1] as string) as T;
}

describe('Node clients trusting the CA with NODE_EXTRA_CA_CERTS', () => {
  it('undici ProxyAgent: GET 200, then POST to the same host 403 REVIEW', async () => {
    const g = await start();
    const run = await runNode(UNDICI_CLIENT, {
      NODE_EXTRA_CA_CERTS: ca.certPath,
      PROXY: g.proxyUrl,
      STEPS: JSON.stringify([
        ['GET', `${ORIGIN}/undici`],
        ['POST', `${ORIGIN}/undici-post`, 'x'],
      ]),
    });
    expect(run.status, run.stderr).toBe(0);
    const [get, post] = parseLast<{ status: number; verdict: string | null; body: string }[]>(
      run.stdout,
    );
    expect(get).toMatchObject({ status: 200, verdict: null });
    expect(JSON.parse(get?.body ?? '')).toMatchObject({ method: 'GET', url: '/undici' });
    expect(post).toMatchObject({ status: 403, verdict: 'REVIEW; boundary=network' });
    expect(events(g).map((e) => [e.method, e.target, e.verdict])).toEqual([
      ['GET', `${ORIGIN}/undici`, 'ALLOW'],
      ['POST', `${ORIGIN}/undici-post`, 'REVIEW'],
    ]);
  });

  it('node:https through a hand-made CONNECT tunnel: 200', async () => {
    const g = await start();
    const run = await runNode(HTTPS_CLIENT, {
      NODE_EXTRA_CA_CERTS: ca.certPath,
      PROXY: g.proxyUrl,
      URL: `${ORIGIN}/node-https`,
    });
    expect(run.status, run.stderr).toBe(0);
    const out = parseLast<{ status: number; body: string }>(run.stdout);
    expect(out.status, run.stdout).toBe(200);
    expect(JSON.parse(out.body).url).toBe('/node-https');
  });

  // A Node client that does not trust the CA destroys its socket mid-handshake: journaled at once.
  it('without NODE_EXTRA_CA_CERTS the Node client refuses the leaf; journaled promptly; nothing sent', async () => {
    // limits.headerTimeout at its default (10 s); a short drain so the stuck tunnel does not
    // hold up stop().
    const g = await start({ limits: { drainTimeout: '1s' } });
    const seen = up.seen.length;
    const run = await runNode(UNDICI_CLIENT, {
      PROXY: g.proxyUrl,
      STEPS: JSON.stringify([['GET', `${ORIGIN}/untrusted`]]),
    });
    expect(run.status, run.stderr).toBe(0);
    const [out] = parseLast<{ error?: string }[]>(run.stdout);
    expect(out?.error).toBe('SELF_SIGNED_CERT_IN_CHAIN');
    expect(up.seen.length).toBe(seen);
    await waitFor(() => refusals(g.records()).length === 1);
    const [refusal] = refusals(g.records());
    expect(refusal).toMatchObject({ session: SESSION, target: UP });
    expect(refusal?.reason).toMatch(/^TLS handshake/);
    expect(refusal?.reason).not.toMatch(/not completed within/);
    // A refusal by the agent, shown as one (review/handshakes.ts): it hung up mid-handshake.
    expect(refusal?.handshake).toBe('closed');
  });
});

const capturesOf = (g: TestGateway) => join(dirname(g.journalPath), 'captures');
async function captured(g: TestGateway, rid: number): Promise<CapturedExchange> {
  const file = join(capturesOf(g), `${rid}.json`);
  await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').endsWith('}'));
  return JSON.parse(readFileSync(file, 'utf8')) as CapturedExchange;
}
/** A captured body as text, whichever encoding the capture says it is stored in. */
const bodyOf = (part: CapturedPart | null) =>
  part?.encoding === 'text' ? part.body : Buffer.from(part?.body ?? '', 'base64').toString();
const header = (part: { headers: readonly [string, string][] }, name: string) =>
  part.headers.find(([n]) => n.toLowerCase() === name)?.[1];

describe('capture', () => {
  const BODY = '0123456789abcdefghijklmnopqrstuvwxyz'.repeat(3); // 108 bytes

  it('bodies are cut at capture.maxBytes with truncated: true and the full size', async () => {
    const g = await start({ capture: { bodies: true, maxBytes: 10 } });
    const res = await curl([...trusted(g), '--data-binary', BODY, `${ORIGIN}/upload/big`]);
    expect(res.status).toBe(200);
    const [event] = events(g);
    const c = await captured(g, event?.seq as number);
    expect(c).toMatchObject({ rid: event?.seq, session: SESSION });
    expect(c.request).toMatchObject({
      method: 'POST',
      url: `${ORIGIN}/upload/big`,
      size: BODY.length,
      truncated: true,
    });
    expect(bodyOf(c.request)).toBe(BODY.slice(0, 10));
    expect(c.response).toMatchObject({
      status: 200,
      size: Number(res.headers['content-length']),
      truncated: true,
    });
    expect(bodyOf(c.response)).toBe(res.body.slice(0, 10));
    // Stored beside the journal, never inside its lines.
    expect(readFileSync(g.journalPath, 'utf8')).not.toContain('abcdefghij');
  });

  it('a body within the limit is kept whole, truncated: false', async () => {
    const g = await start({ capture: { bodies: true, maxBytes: 1_000 } });
    const res = await curl([...trusted(g), '--data-binary', 'small', `${ORIGIN}/upload/small`]);
    expect(res.status).toBe(200);
    const c = await captured(g, events(g)[0]?.seq as number);
    expect(c.request).toMatchObject({ size: 5, truncated: false });
    expect(bodyOf(c.request)).toBe('small');
    expect(c.response).toMatchObject({ truncated: false, size: res.body.length });
    expect(bodyOf(c.response)).toBe(res.body);
  });

  it('authorization and cookie are redacted in captures (not in what is sent)', async () => {
    const g = await start({ capture: { bodies: true } });
    const res = await curl([
      ...trusted(g),
      '-H',
      'Authorization: Bearer sekrit-token',
      '-H',
      'Cookie: session=sekrit-cookie',
      `${ORIGIN}/with-secrets`,
    ]);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).headers).toMatchObject({
      authorization: 'Bearer sekrit-token',
      cookie: 'session=sekrit-cookie',
    });
    const c = await captured(g, events(g)[0]?.seq as number);
    expect(header(c.request, 'authorization')).toBe('[redacted]');
    expect(header(c.request, 'cookie')).toBe('[redacted]');
    expect(header(c.request, 'user-agent')).toMatch(/^curl\//);
    const file = readFileSync(join(capturesOf(g), `${c.rid}.json`), 'utf8');
    // The response body echoes the headers: only the header fields are redacted, so look there.
    expect(JSON.stringify(c.request.headers)).not.toContain('sekrit');
    expect(file).toContain('[redacted]');
  });

  it('capture.redact: false keeps them', async () => {
    const g = await start({ capture: { bodies: true, redact: false } });
    await curl([
      ...trusted(g),
      '-H',
      'Authorization: Bearer sekrit-token',
      '-H',
      'Cookie: session=sekrit-cookie',
      `${ORIGIN}/kept`,
    ]);
    const c = await captured(g, events(g)[0]?.seq as number);
    expect(header(c.request, 'authorization')).toBe('Bearer sekrit-token');
    expect(header(c.request, 'cookie')).toBe('session=sekrit-cookie');
  });

  it('plain HTTP is captured the same way', async () => {
    const g = await start({ capture: { bodies: true, maxBytes: 4 } });
    const res = await curl(['-x', g.proxyUrl, '--data-binary', 'plain-body', `${plain.url}/p`]);
    expect(res.status).toBe(200);
    const c = await captured(g, events(g)[0]?.seq as number);
    expect(c.request).toMatchObject({ url: `${plain.url}/p`, size: 10, truncated: true });
    expect(bodyOf(c.request)).toBe('plai');
  });

  it('is off by default: no captures folder', async () => {
    const g = await start();
    expect((await curl([...trusted(g), `${ORIGIN}/nothing-kept`])).status).toBe(200);
    // A capture would be saved right after the outcome is journaled.
    await waitForRecords(g, outcomeOf(events(g)[0]?.seq));
    expect(existsSync(capturesOf(g))).toBe(false);
  });
});

/**
 * The HAR 1.2 structure (http://www.softwareishard.com/blog/har-12-spec/): the fields the
 * spec marks required, with their types. Returns what is wrong, empty when valid.
 */
function harErrors(har: unknown): string[] {
  const errors: string[] = [];
  const isObj = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  const need = (o: unknown, path: string, field: string, type: string): unknown => {
    const v = isObj(o) ? o[field] : undefined;
    const ok =
      type === 'array'
        ? Array.isArray(v)
        : type === 'object'
          ? isObj(v)
          : type === 'integer'
            ? Number.isInteger(v)
            : typeof v === type;
    if (!ok) errors.push(`${path}.${field}: expected ${type}, got ${JSON.stringify(v)}`);
    return v;
  };
  const pairs = (list: unknown, path: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((p, i) => {
      need(p, `${path}[${i}]`, 'name', 'string');
      need(p, `${path}[${i}]`, 'value', 'string');
    });
  };
  const log = need(har, '', 'log', 'object');
  if (isObj(log) && log.version !== '1.2') errors.push(`log.version: ${String(log.version)}`);
  const creator = need(log, 'log', 'creator', 'object');
  need(creator, 'log.creator', 'name', 'string');
  need(creator, 'log.creator', 'version', 'string');
  const entries = need(log, 'log', 'entries', 'array');
  if (!Array.isArray(entries)) return errors;
  let previous = -Infinity;
  entries.forEach((e: unknown, i) => {
    const at = `log.entries[${i}]`;
    const started = need(e, at, 'startedDateTime', 'string');
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
    if (typeof started === 'string') {
      if (!iso.test(started) || Number.isNaN(Date.parse(started)))
        errors.push(`${at}.startedDateTime: not ISO 8601: ${started}`);
      if (Date.parse(started) < previous) errors.push(`${at}: entries out of order`);
      previous = Date.parse(started);
    }
    const time = need(e, at, 'time', 'number');
    const req = need(e, at, 'request', 'object');
    need(req, `${at}.request`, 'method', 'string');
    const url = need(req, `${at}.request`, 'url', 'string');
    if (typeof url === 'string' && !URL.canParse(url)) errors.push(`${at}.request.url: ${url}`);
    need(req, `${at}.request`, 'httpVersion', 'string');
    for (const f of ['cookies', 'headers', 'queryString']) {
      pairs(need(req, `${at}.request`, f, 'array'), `${at}.request.${f}`);
    }
    need(req, `${at}.request`, 'headersSize', 'integer');
    need(req, `${at}.request`, 'bodySize', 'integer');
    if (isObj(req) && req.postData !== undefined) {
      need(req.postData, `${at}.request.postData`, 'mimeType', 'string');
      need(req.postData, `${at}.request.postData`, 'text', 'string');
    }
    const res = need(e, at, 'response', 'object');
    need(res, `${at}.response`, 'status', 'integer');
    need(res, `${at}.response`, 'statusText', 'string');
    need(res, `${at}.response`, 'httpVersion', 'string');
    pairs(need(res, `${at}.response`, 'cookies', 'array'), `${at}.response.cookies`);
    pairs(need(res, `${at}.response`, 'headers', 'array'), `${at}.response.headers`);
    const content = need(res, `${at}.response`, 'content', 'object');
    need(content, `${at}.response.content`, 'size', 'integer');
    need(content, `${at}.response.content`, 'mimeType', 'string');
    if (isObj(content) && content.encoding !== undefined && content.encoding !== 'base64')
      errors.push(`${at}.response.content.encoding: ${String(content.encoding)}`);
    need(res, `${at}.response`, 'redirectURL', 'string');
    need(res, `${at}.response`, 'headersSize', 'integer');
    need(res, `${at}.response`, 'bodySize', 'integer');
    need(e, at, 'cache', 'object');
    const timings = need(e, at, 'timings', 'object');
    let sum = 0;
    for (const f of ['send', 'wait', 'receive']) {
      const t = need(timings, `${at}.timings`, f, 'number');
      if (typeof t === 'number' && t < 0) errors.push(`${at}.timings.${f}: negative (${t})`);
      if (typeof t === 'number' && t > 0) sum += t;
    }
    for (const f of ['blocked', 'dns', 'connect', 'ssl']) {
      const t = isObj(timings) ? timings[f] : undefined;
      if (t !== undefined && (typeof t !== 'number' || t < -1))
        errors.push(`${at}.timings.${f}: ${String(t)}`);
      if (typeof t === 'number' && t > 0 && f !== 'ssl') sum += t;
    }
    if (typeof time === 'number' && Math.abs(time - sum) > 1)
      errors.push(`${at}.time ${time} is not the sum of its timings (${sum})`);
    if (isObj(e) && e.comment !== undefined && typeof e.comment !== 'string')
      errors.push(`${at}.comment: not a string`);
  });
  return errors;
}

describe('trajgate export --har', () => {
  it('writes HAR 1.2 for the session: allowed, refused and captured exchanges, verdicts included', async () => {
    const g = await start({ capture: { bodies: true } });
    expect((await curl([...trusted(g), `${ORIGIN}/get?x=1&y=two`])).status).toBe(200);
    const posted = await curl([
      ...trusted(g),
      '-H',
      'Content-Type: application/json',
      '--data-binary',
      '{"a":1}',
      `${ORIGIN}/upload/json`,
    ]);
    expect(posted.status).toBe(200);
    expect((await curl([...trusted(g), '-X', 'PUT', `${ORIGIN}/put`])).status).toBe(403);
    // A blind tunnel has no method or URL: not an HTTP exchange for HAR.
    await curl(['--cacert', TEST_CA_PATH, '-x', g.proxyUrl, `${blind.url}/b`]);
    await waitFor(() => outcomes(g).length === 4);
    // The refused PUT is captured too (request and refusal), not only the forwarded two.
    const files = () => readdirSync(capturesOf(g)).filter((f) => f.endsWith('.json'));
    await waitFor(() => existsSync(capturesOf(g)) && files().length === 3);

    const r = await exportHar(g.journalPath, SESSION);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`wrote 3 entries for ${SESSION} to ${r.out}\n`);
    const har = JSON.parse(readFileSync(r.out, 'utf8')) as {
      log: { creator: { name: string }; entries: Record<string, any>[] };
    };
    expect(harErrors(har)).toEqual([]);
    expect(har.log.creator.name).toBe('trajgate');
    const [get, post, put] = har.log.entries;
    expect(get).toMatchObject({
      request: {
        method: 'GET',
        url: `${ORIGIN}/get?x=1&y=two`,
        queryString: [
          { name: 'x', value: '1' },
          { name: 'y', value: 'two' },
        ],
      },
      response: { status: 200, content: { mimeType: 'application/json' } },
      _trajgate: { verdict: 'ALLOW' },
    });
    expect(get?.comment).toMatch(/^trajgate ALLOW/);
    expect(JSON.parse(get?.response.content.text).url).toBe('/get?x=1&y=two');
    expect(post).toMatchObject({
      request: {
        method: 'POST',
        bodySize: 7,
        postData: { mimeType: 'application/json', text: '{"a":1}' },
      },
    });
    expect(put).toMatchObject({
      request: { method: 'PUT', url: `${ORIGIN}/put` },
      response: { status: 403 },
      _trajgate: { verdict: 'REVIEW', boundary: 'network' },
    });
    expect(put?.comment).toMatch(/^trajgate REVIEW: network/);
    // `_trajgate` is the whole decision, as journaled (and the outcome's error, if any).
    const putEvent = events(g).find((e) => e.method === 'PUT');
    expect(putEvent?.count).toBe(1);
    expect(put?._trajgate).toMatchObject({
      rid: putEvent?.seq,
      seq: putEvent?.seq,
      verdict: 'REVIEW',
      boundary: 'network',
      count: putEvent?.count,
      reason: putEvent?.reason,
      approved: false,
    });
    expect(put?.comment).toBe(`trajgate REVIEW: network (${putEvent?.reason})`);

    // --since drops what came before.
    const since = events(g)[1]?.ts as string;
    const r2 = await exportHar(g.journalPath, SESSION, ['--since', since]);
    expect(r2.status).toBe(0);
    const laterHar = JSON.parse(readFileSync(r2.out, 'utf8'));
    expect(harErrors(laterHar)).toEqual([]);
    expect(
      laterHar.log.entries.map((e: { request: { method: string } }) => e.request.method),
    ).toEqual(['POST', 'PUT']);
  });

  it('a session with no HTTP exchange (a blind tunnel) exports an empty, still valid HAR', async () => {
    const g = await start();
    await curl(['--cacert', TEST_CA_PATH, '-x', g.proxyUrl, `${blind.url}/b`]);
    // The tunnel's outcome, written when it closes: then its journal is complete.
    await waitForRecords(g, outcomeOf(events(g)[0]?.seq));
    const r = await exportHar(g.journalPath, SESSION);
    expect(r.status).toBe(0);
    const har = JSON.parse(readFileSync(r.out, 'utf8'));
    expect(harErrors(har)).toEqual([]);
    expect(har.log.entries).toEqual([]);
  });
});
