import type { Http2ServerResponse } from 'node:http2';
import { describe, expect, it } from 'vitest';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { h2Request, h2Through, NGHTTP2_CANCEL, startH2Upstream } from '../helpers/h2.js';
import { flowRecords, quietFor } from '../helpers/flows.js';
import { interceptPerTest, makeLocalCa, refusals } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';
import { outcomeOf, waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * HTTP/2 on intercepted TLS with real clients: curl --http2 and Node's http2 client over a
 * CONNECT to the proxy. `up` is an HTTP/1.1 TLS upstream, `h2up` an HTTP/2-only one; each
 * stream is judged, journaled and forwarded on its own. Loopback only.
 */
const ca = makeLocalCa();
const up = await startUpstream({ tls: true });
const stranger = await startUpstream();
const h2up = await startH2Upstream();
const UP = `127.0.0.1:${up.port}`;
const H2UP = h2up.authority;
const SESSION = '127.0.0.1';

/** GET anywhere on both upstreams, POST only under /upload; anything else is REVIEW (403). */
const start = interceptPerTest({
  ca,
  intercept: [UP, H2UP],
  allow: [`GET https://${UP}/`, `POST https://${UP}/upload`, `GET https://${H2UP}/`],
  ports: [up.port, h2up.port, stranger.port],
  policy: { pause: 'block' },
});

const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');
const outcomes = (g: TestGateway) =>
  g.records().filter((r): r is OutcomeRecord => r.type === 'outcome');

/** curl --http2 through the proxy trusting the trajgate CA; the body, then the HTTP version. */
async function curlH2(g: TestGateway, ...args: string[]) {
  const res = await curl([
    '--http2',
    '--cacert',
    ca.certPath,
    '-x',
    g.proxyUrl,
    '-w',
    '\n%{http_version}',
    ...args,
  ]);
  const cut = res.body.lastIndexOf('\n');
  return { ...res, body: res.body.slice(0, cut), httpVersion: res.body.slice(cut + 1) };
}

describe('curl --http2 through interception', () => {
  it('speaks HTTP/2; an allowed path is answered 200 by the upstream, another refused 403 with the reason', async () => {
    const g = await start();
    const seen = up.seen.length;
    const ok = await curlH2(g, `https://${UP}/get?q=1`);
    expect(ok.httpVersion).toBe('2');
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ method: 'GET', url: '/get?q=1' });
    const refused = await curlH2(g, '-X', 'DELETE', `https://${UP}/items/7`);
    expect(refused.httpVersion).toBe('2');
    expect(refused.status).toBe(403);
    expect(refused.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(refused.body).toContain(`trajgate refused this request: DELETE https://${UP}/items/7`);
    expect(up.seen.length).toBe(seen + 1);
    const [allowed, denied] = events(g);
    await waitForRecords(g, outcomeOf(denied?.seq));
    expect(events(g)).toEqual([
      expect.objectContaining({
        session: SESSION,
        target: `https://${UP}/get?q=1`,
        method: 'GET',
        verdict: 'ALLOW',
      }),
      expect.objectContaining({
        session: SESSION,
        target: `https://${UP}/items/7`,
        method: 'DELETE',
        verdict: 'REVIEW',
      }),
    ]);
    expect(outcomes(g)).toEqual([
      expect.objectContaining({ rid: allowed?.seq, status: 200 }),
      expect.objectContaining({ rid: denied?.seq, status: 403 }),
    ]);
  });
});

describe("Node's http2 client over CONNECT", () => {
  it('concurrent streams on one connection are judged each on its own', async () => {
    const g = await start();
    const { session } = await h2Through(g.gw.proxy.port, UP, ca.pem);
    const paths = ['/a', '/b', '/c'];
    const answers = await Promise.all([
      ...paths.map((p) => h2Request(session, { ':path': p })),
      h2Request(session, { ':method': 'PUT', ':path': '/nope' }, 'body'),
    ]);
    session.close();
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 403]);
    expect(answers.slice(0, 3).map((a) => JSON.parse(a.body).url)).toEqual(paths);
    expect(answers[3]?.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(answers[3]?.body).toContain(`PUT https://${UP}/nope`);
    await waitForRecords(g, (r) => r.type === 'outcome', 4);
    expect(
      events(g)
        .map((e) => [e.method, e.target, e.verdict])
        .sort(),
    ).toEqual([
      ['GET', `https://${UP}/a`, 'ALLOW'],
      ['GET', `https://${UP}/b`, 'ALLOW'],
      ['GET', `https://${UP}/c`, 'ALLOW'],
      ['PUT', `https://${UP}/nope`, 'REVIEW'],
    ]);
    expect(refusals(g.records())).toEqual([]);
  });

  it('a POST body is forwarded intact', async () => {
    const g = await start();
    const { session } = await h2Through(g.gw.proxy.port, UP, ca.pem);
    const body = 'x'.repeat(70_000) + '\u00e9nd';
    const res = await h2Request(
      session,
      { ':method': 'POST', ':path': '/upload/big', 'content-type': 'text/plain' },
      body,
    );
    session.close();
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ method: 'POST', url: '/upload/big', body });
  });
});

describe('upstream HTTP/2 or HTTP/1.1', () => {
  it('an HTTP/2 upstream is spoken to in HTTP/2', async () => {
    const g = await start();
    const { session } = await h2Through(g.gw.proxy.port, H2UP, ca.pem);
    const res = await h2Request(session, { ':path': '/over-h2' });
    session.close();
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ url: '/over-h2', httpVersion: '2.0' });
    expect(h2up.seen.at(-1)).toMatchObject({ url: '/over-h2', httpVersion: '2.0' });
  });

  it('an HTTP/1.1 upstream still answers an HTTP/2 agent', async () => {
    const g = await start();
    const { session } = await h2Through(g.gw.proxy.port, UP, ca.pem);
    const res = await h2Request(session, { ':path': '/over-h1' });
    session.close();
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ url: '/over-h1' });
  });
});

/** Two unapproved requests from the same session (REVIEW, then PAUSE): the session pauses. */
async function pauseSession(g: TestGateway): Promise<void> {
  for (const path of ['/one', '/two'])
    expect((await curl(['-x', g.proxyUrl, `${stranger.url}${path}`])).status).toBe(403);
  expect(g.gw.sessions.isPaused(SESSION)).toBe(true);
}

/** A `/stream` request on the HTTP/2 upstream, its first chunk received; the upstream's answer. */
async function openStream(g: TestGateway, path: string) {
  const { session, socket } = await h2Through(g.gw.proxy.port, H2UP, ca.pem);
  const before = h2up.streams.length;
  const stream = session.request({ ':path': path });
  stream.setEncoding('utf8');
  stream.on('error', () => {});
  const first = await new Promise<string>((r) => stream.once('data', r));
  expect(first).toBe('first\n');
  await waitFor(() => h2up.streams.length > before);
  return { session, socket, stream, upstream: h2up.streams.at(-1) as Http2ServerResponse };
}

describe('streams are flows', () => {
  it('a pause freezes a streaming answer: what the upstream writes meanwhile arrives on resume', async () => {
    const g = await start();
    const { session, stream, upstream } = await openStream(g, '/stream/slow');
    await pauseSession(g);
    await waitFor(() => flowRecords(g.records()).some((r) => r.change === 'frozen'));
    upstream.write('while-paused\n');
    expect(await quietFor(stream as never, 400)).toBe('');
    const rest = new Promise<string>((resolve) => {
      let got = '';
      stream.on('data', (c: string) => (got += c));
      stream.on('end', () => resolve(got));
    });
    g.gw.sessions.resume(SESSION, { reset: true });
    upstream.end('last\n');
    expect(await rest).toBe('while-paused\nlast\n');
    session.close();
    const flows = flowRecords(g.records()).map((r) => [r.flow, r.target, r.change]);
    expect(flows).toEqual(
      expect.arrayContaining([
        ['request', `https://${H2UP}/stream/slow`, 'frozen'],
        ['request', `https://${H2UP}/stream/slow`, 'thawed'],
      ]),
    );
  });

  it('a frozen connection reads nothing: a stream opened meanwhile waits, unjudged, for the resume, as does a PING', async () => {
    const g = await start();
    const { session, upstream: kept } = await openStream(g, '/stream/kept');
    await pauseSession(g);
    await waitFor(() => flowRecords(g.records()).some((r) => r.flow === 'intercepted'));
    const seen = h2up.seen.length;
    const judged = events(g).length;
    const stream = session.request({ ':path': '/asked-while-paused' });
    let status = 0;
    stream.on('response', (h) => (status = Number(h[':status'])));
    // Not even a PING is answered: nghttp2 reads nothing of a frozen connection.
    let pinged = false;
    const pong = new Promise<void>((r) => session.ping(() => r(void (pinged = true))));
    expect(await quietFor(stream as never, 400)).toBe('');
    expect(status).toBe(0);
    expect(pinged).toBe(false);
    expect(events(g).length).toBe(judged);
    expect(h2up.seen.length).toBe(seen);
    g.gw.sessions.resume(SESSION, { reset: true });
    await pong;
    const body = await new Promise<string>((resolve) => {
      let got = '';
      stream.setEncoding('utf8');
      stream.on('data', (c: string) => (got += c));
      stream.on('end', () => resolve(got));
    });
    expect(status).toBe(200);
    expect(JSON.parse(body)).toMatchObject({ url: '/asked-while-paused' });
    expect(events(g).at(-1)).toMatchObject({
      target: `https://${H2UP}/asked-while-paused`,
      verdict: 'ALLOW',
    });
    kept.end();
    session.close();
  });

  it('a deny resets a frozen stream (its outcome says closed) and ends the connection with GOAWAY', async () => {
    const g = await start();
    const { session, stream } = await openStream(g, '/stream/denied');
    await pauseSession(g);
    await waitFor(() => flowRecords(g.records()).some((r) => r.change === 'frozen'));
    const reset = new Promise<number>((r) => stream.once('close', () => r(stream.rstCode ?? -1)));
    const goaway = new Promise<[number, string]>((r) =>
      session.once('goaway', (code, _last, data) => r([code, data?.toString() ?? ''])),
    );
    g.gw.sessions.deny(SESSION);
    expect(await reset).toBe(NGHTTP2_CANCEL);
    expect(await goaway).toEqual([
      NGHTTP2_CANCEL,
      'trajgate closed this connection: denied by an operator',
    ]);
    const event = events(g).find((e) => e.target === `https://${H2UP}/stream/denied`);
    const records = await waitForRecords(g, outcomeOf(event?.seq));
    expect(records.find(outcomeOf(event?.seq))).toMatchObject({
      status: 200,
      error: 'trajgate closed this request: denied by an operator',
    });
    expect(flowRecords(records).map((r) => [r.flow, r.change, r.reason])).toEqual([
      ['request', 'frozen', 'session paused'],
      ['intercepted', 'frozen', 'session paused'],
      ['request', 'closed', 'denied by an operator'],
      ['intercepted', 'closed', 'denied by an operator'],
    ]);
  });
});

describe('pseudo-header rules (RFC 9113 § 8.3)', () => {
  const cases: {
    name: string;
    headers: Record<string, string>;
    status: number;
    reason: RegExp;
    target: string;
  }[] = [
    {
      name: ':authority other than the CONNECT host',
      headers: { ':authority': 'other.example', ':path': '/get' },
      status: 421,
      reason:
        /^:authority "other\.example" and :path "\/get" do not match the tunnel to 127\.0\.0\.1:\d+$/,
      target: '/get',
    },
    {
      name: 'Host disagreeing with :authority',
      headers: { ':authority': UP, ':path': '/where?x=1', host: 'other.example' },
      status: 400,
      reason:
        /^Host "other\.example" disagrees with :authority "127\.0\.0\.1:\d+" \(RFC 9113 § 8\.3\.1\)$/,
      target: '/where?x=1',
    },
    {
      name: ':scheme http inside TLS',
      headers: { ':scheme': 'http', ':path': '/plain' },
      status: 400,
      reason: /^:scheme "http" inside TLS \(RFC 9113 § 8\.3\.1\)$/,
      target: '/plain',
    },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.status} with the reason, journaled with the path as written, nothing sent`, async () => {
      const g = await start();
      const { session } = await h2Through(g.gw.proxy.port, UP, ca.pem);
      const seen = up.seen.length;
      const res = await h2Request(session, c.headers);
      expect(res.status).toBe(c.status);
      expect(res.body).toMatch(/^trajgate: /);
      const after = await h2Request(session, { ':path': '/after' });
      session.close();
      expect(after.status).toBe(200);
      expect(up.seen.length).toBe(seen + 1);
      const [refusal, ...more] = refusals(g.records());
      expect(more).toEqual([]);
      expect(refusal).toMatchObject({ status: c.status, target: c.target, session: SESSION });
      expect(refusal?.reason).toMatch(c.reason);
      expect(res.body).toContain(refusal?.reason);
      expect(events(g).map((e) => e.target)).toEqual([`https://${UP}/after`]);
    });
  }

  it('CONNECT on a stream: 405, journaled, no tunnel opened', async () => {
    const g = await start();
    const { session } = await h2Through(g.gw.proxy.port, UP, ca.pem);
    const res = await h2Request(session, { ':method': 'CONNECT', ':authority': UP });
    session.close();
    expect(res.status).toBe(405);
    expect(res.body).toContain('CONNECT inside TLS is not allowed');
    expect(refusals(g.records())).toEqual([
      expect.objectContaining({ status: 405, target: UP, session: SESSION }),
    ]);
    expect(events(g)).toEqual([]);
  });
});
