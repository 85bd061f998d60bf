import { afterEach, describe, expect, it } from 'vitest';
import { ProxyAgent, request } from 'undici';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { startUpstream, TEST_CA_PATH } from '../helpers/upstream.js';
import { isOutcome, waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * The seed article's story through the real proxy with real clients: curl (plain HTTP, and
 * HTTPS through CONNECT) and undici's ProxyAgent. Loopback only: `allowed` is allowlisted by
 * address and port (allowPrivate exempts 127.0.0.1 for it); `other` is not allowlisted.
 */
const allowed = await startUpstream();
const other = await startUpstream();
const tls = await startUpstream({ tls: true });
const TOKEN = 'agent-1-token-0123456789abcdef';

let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

async function start(policy: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  gateway = await startTestGateway({
    policy: { holdTimeout: '10s', ...policy },
    network: {
      allow: [`127.0.0.1:${allowed.port}`, `127.0.0.1:${tls.port}`],
      allowPrivate: ['127.0.0.1/32'],
    },
    ...extra,
  });
  return gateway;
}

/** Drives a session to PAUSE: one unapproved request (REVIEW), then a second one, held. */
async function pauseSession(g: TestGateway, session = '127.0.0.1', auth: string[] = []) {
  const review = await curl([...auth, '-x', g.proxyUrl, `${other.url}/first`]);
  expect(review.status).toBe(403);
  const held = curl([...auth, '-x', g.proxyUrl, `${other.url}/second`]);
  await waitFor(() => g.gw.sessions.held(session).length === 1);
  return { review, held, session };
}

describe('the seed story end to end', () => {
  it('allowed 200; first unapproved 403 REVIEW; second held, then approve + resume → 200', async () => {
    const g = await start();
    const ok = await curl(['-x', g.proxyUrl, `${allowed.url}/ok`]);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).url).toBe('/ok');

    const { review, held, session } = await pauseSession(g);
    expect(review.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(review.body).toContain(`trajgate refused this request: GET ${other.url}/first`);
    expect(review.body).toContain('flagged for a person to review');
    expect(review.body).toContain('crossing the network boundary again pauses this session');
    expect(g.gw.sessions.isPaused(session)).toBe(true);
    expect(other.seen).toHaveLength(0);

    g.gw.sessions.approve({ pattern: `127.0.0.1:${other.port}`, session });
    expect(g.gw.sessions.resume(session)).toBe(1);
    const released = await held;
    expect(released.status).toBe(200);
    expect(JSON.parse(released.body).url).toBe('/second');
    expect(other.seen.map((r) => r.url)).toEqual(['/second']);

    const records = await waitForRecords(g, isOutcome, 3);
    const events = records.filter((r) => r.type === 'event');
    expect(events.map((r) => r.verdict)).toEqual(['ALLOW', 'REVIEW', 'PAUSE', 'ALLOW']);
    const outcomes = records.filter((r) => r.type === 'outcome');
    expect(outcomes.map((r) => r.status)).toEqual([200, 403, 200]);
    // the re-judged record belongs to the held request
    expect(events[3]).toMatchObject({ rid: events[2]?.seq, approvedBy: `127.0.0.1:${other.port}` });
  });

  it('a held request that nobody decides is answered 403 PAUSE after holdTimeout', async () => {
    const g = await start({ holdTimeout: '1s' });
    const seen = other.seen.length;
    const { held } = await pauseSession(g);
    const answer = await held;
    expect(answer.status).toBe(403);
    expect(answer.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=network');
    expect(answer.body).toContain(
      `trajgate paused this session: GET ${other.url}/second was not sent`,
    );
    expect(answer.body).toContain('No operator decided within the hold time');
    expect(other.seen).toHaveLength(seen);
  });

  it('while paused, an allowlisted request is held too, and released by the same resume', async () => {
    const g = await start();
    const { held, session } = await pauseSession(g);
    const seen = allowed.seen.length;
    const allowlisted = curl(['-x', g.proxyUrl, `${allowed.url}/while-paused`]);
    await waitFor(() => g.gw.sessions.held(session).length === 2);
    expect(allowed.seen).toHaveLength(seen);
    g.gw.sessions.approve({ pattern: `127.0.0.1:${other.port}`, session });
    expect(g.gw.sessions.resume(session)).toBe(2);
    expect((await allowlisted).status).toBe(200);
    expect((await held).status).toBe(200);
    const heldRecord = g.records().find((r) => r.type === 'event' && r.held === true);
    expect(heldRecord).toMatchObject({ verdict: 'PAUSE', target: `${allowed.url}/while-paused` });
  });

  it('deny answers every held request 403 and keeps the session paused', async () => {
    const g = await start();
    const { held, session } = await pauseSession(g);
    expect(g.gw.sessions.deny(session)).toBe(1);
    const answer = await held;
    expect(answer.status).toBe(403);
    expect(answer.body).toContain('An operator reviewed the recent events and denied it');
    expect(g.gw.sessions.isPaused(session)).toBe(true);
    expect(g.records().some((r) => r.type === 'deny' && r.released === 1)).toBe(true);
  });

  it('policy.pause: block answers the pausing request 403 at once, and every later one', async () => {
    const g = await start({ pause: 'block' });
    await curl(['-x', g.proxyUrl, `${other.url}/first`]);
    const second = await curl(['-x', g.proxyUrl, `${other.url}/second`]);
    expect(second.status).toBe(403);
    expect(second.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=network');
    const later = await curl(['-x', g.proxyUrl, `${allowed.url}/later`]);
    expect(later.status).toBe(403);
    expect(g.gw.sessions.held('127.0.0.1')).toHaveLength(0);
  });

  it('policy.review: pass forwards the first unapproved request and records it', async () => {
    const g = await start({ review: 'pass' });
    const first = await curl(['-x', g.proxyUrl, `${other.url}/reported`]);
    expect(first.status).toBe(200);
    expect(g.records().find((r) => r.type === 'event')).toMatchObject({ verdict: 'REVIEW' });
  });
});

describe('HTTPS through CONNECT (curl)', () => {
  it('tunnels to an allowlisted host:port byte for byte, and refuses an unapproved one', async () => {
    const g = await start(
      {},
      { network: { allow: [`127.0.0.1:${tls.port}`], allowPrivate: ['127.0.0.1/32'] } },
    );
    const ok = await curl(['--cacert', TEST_CA_PATH, '-x', g.proxyUrl, `${tls.url}/secure`]);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).url).toBe('/secure');
    const refused = await curl([
      '--cacert',
      TEST_CA_PATH,
      '-x',
      g.proxyUrl,
      `https://127.0.0.1:${other.port}/`,
    ]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('403');
    // The tunnel's outcome is written when it closes, which may be after curl has exited.
    const records = await waitForRecords(g, (r) => r.type === 'outcome' && r.status === 200);
    const events = records.filter((r) => r.type === 'event');
    expect(events.map((r) => [r.target, r.verdict])).toEqual([
      [`127.0.0.1:${tls.port}`, 'ALLOW'],
      [`127.0.0.1:${other.port}`, 'REVIEW'],
    ]);
    const tunnel = records.find((r) => r.type === 'outcome' && r.status === 200);
    expect(tunnel).toMatchObject({ type: 'outcome' });
    expect((tunnel as { bytesDown: number }).bytesDown).toBeGreaterThan(1000);
  });
});

describe('agents and credentials (undici ProxyAgent, curl)', () => {
  const agents = { agents: [{ id: 'agent-1', token: TOKEN }] };
  const basic = `Basic ${Buffer.from(`agent-1:${TOKEN}`).toString('base64')}`;

  it('names the session by agent id, through a tunnel and as absolute-form', async () => {
    const g = await start({}, agents);
    for (const proxyTunnel of [true, false]) {
      const dispatcher = new ProxyAgent({ uri: g.proxyUrl, token: basic, proxyTunnel });
      const res = await request(`${allowed.url}/undici-${proxyTunnel}`, { dispatcher });
      expect(res.statusCode).toBe(200);
      expect(((await res.body.json()) as { url: string }).url).toBe(`/undici-${proxyTunnel}`);
      await dispatcher.close();
    }
    expect(
      g
        .records()
        .filter((r) => r.type === 'event')
        .map((r) => r.session),
    ).toEqual(['agent-1', 'agent-1']);
  });

  it('never forwards Proxy-Authorization, nor fields named in Connection', async () => {
    const g = await start({}, agents);
    const res = await curl([
      '-x',
      g.proxyUrl,
      '-U',
      `agent-1:${TOKEN}`,
      '-H',
      'Connection: x-hop',
      '-H',
      'X-Hop: secret',
      '-H',
      'X-Kept: yes',
      `${allowed.url}/echo`,
    ]);
    expect(res.status).toBe(200);
    const headers = JSON.parse(res.body).headers as Record<string, string>;
    expect(headers['proxy-authorization']).toBeUndefined();
    expect(headers['x-hop']).toBeUndefined();
    expect(headers['x-kept']).toBe('yes');
    expect(headers.via).toBe('1.1 trajgate');
    expect(JSON.stringify(g.records())).not.toContain(TOKEN);
  });

  it('answers 407 with Proxy-Authenticate for a missing or wrong token, and journals it', async () => {
    const g = await start({}, agents);
    const missing = await curl(['-x', g.proxyUrl, `${allowed.url}/x`]);
    expect(missing.status).toBe(407);
    expect(missing.headers['proxy-authenticate']).toBe('Basic realm="trajgate"');
    const wrong = await curl(['-x', g.proxyUrl, '-U', 'agent-1:not-the-token', `${allowed.url}/x`]);
    expect(wrong.status).toBe(407);
    expect(wrong.body).toContain('wrong agent id or token');
    expect(allowed.seen.filter((r) => r.url === '/x')).toHaveLength(0);
    const refusals = g.records().filter((r) => r.type === 'refusal');
    expect(refusals.map((r) => r.status)).toEqual([407, 407]);
    expect(JSON.stringify(refusals)).not.toContain('not-the-token');
  });
});
