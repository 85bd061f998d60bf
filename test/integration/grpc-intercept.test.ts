import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventRecord, OutcomeRecord, TunnelRecord } from '../../src/journal/records.js';
import { CA_BUNDLE } from '../../src/tls/ca-bundle.js';
import { adminClient, generatedToken } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { AGENT_TOKEN } from '../helpers/gateway.js';
import type { ClientCall, ClientLine, ClientTrust } from '../helpers/grpc.js';
import { grpcCall, startGrpcUpstream, startSilentH2 } from '../helpers/grpc.js';
import { DRIFT_AFTER_FAILURE } from '../helpers/rules.js';
import { interceptPerTest, makeLocalCa } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';
import { outcomeOf, waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * gRPC end to end through TLS interception: the real @grpc/grpc-js client, in a child process
 * that finds trajgate through `https_proxy` (agent credentials as its userinfo) and trusts the
 * trajgate CA (createSsl with its PEM, or NODE_EXTRA_CA_CERTS as `trajgate env` sets it), calls
 * a real grpc-js server on loopback (test CA certificate, trusted by trajgate through
 * tls.upstreamCa). Each call is one judged POST; its gRPC status is the outcome.
 */
const ca = makeLocalCa();
const up = await startGrpcUpstream();
const stranger = await startUpstream();
const silent = await startSilentH2();
const AGENT = 'agent-1';
const method = (name: string) => `${up.service}${name}`;
const start = interceptPerTest({
  ca,
  intercept: [up.authority],
  allow: [`POST ${method('Unary')}`, `POST ${method('Count')}`, `POST ${method('Collect')}`],
  ports: [up.port, stranger.port],
  agents: [{ id: AGENT, token: AGENT_TOKEN }],
  policy: { pause: 'block' },
});

const call = (
  g: TestGateway,
  name: 'Unary' | 'Count' | 'Collect' | 'Fail',
  request: unknown,
  trust: ClientTrust = { ca: ca.certPath },
) =>
  grpcCall(
    g.proxyUrl.replace('http://', `http://${AGENT}:${AGENT_TOKEN}@`),
    trust,
    up.authority,
    name,
    request,
  );
const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');
const outcome = async (g: TestGateway, event: EventRecord | undefined) =>
  (await waitForRecords(g, outcomeOf(event?.seq))).find(outcomeOf(event?.seq)) as OutcomeRecord;
const flows = (g: TestGateway) =>
  g.records().filter((r): r is TunnelRecord => r.type === 'flow' || r.type === 'tunnel');
const messages = (lines: readonly ClientLine[]) =>
  lines.flatMap((l) => (l.message ? [l.message.text] : []));

describe('grpc-js through https_proxy with interception', () => {
  it('a unary call is judged as POST to its method URL, forwarded, and its status 0 is the outcome', async () => {
    const g = await start();
    const before = up.calls.length;
    const text = 'x'.repeat(100_000); // more than one HTTP/2 flow-control window each way
    const r = await call(g, 'Unary', { text }).done;
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]?.status).toEqual({ code: 0 });
    expect(r.lines[0]?.message?.n).toBe(100_000);
    expect(r.lines[0]?.message?.text === text).toBe(true);
    expect(up.calls.slice(before).map((c) => c.method)).toEqual(['Unary']);
    const metadata = up.calls.at(-1)?.metadata ?? {};
    expect(metadata.via).toBe('1.1 trajgate');
    expect(Object.keys(metadata)).not.toContain('proxy-authorization');
    const [event] = events(g);
    expect(event).toMatchObject({
      session: AGENT,
      kind: 'network',
      method: 'POST',
      target: method('Unary'),
      verdict: 'ALLOW',
    });
    const out = await outcome(g, event);
    expect(out).toMatchObject({ status: 200, grpcStatus: 0 });
    expect(out.failed).toBeUndefined();
    expect(out.bytesUp).toBeGreaterThan(100_000);
    expect(out.bytesDown).toBeGreaterThan(100_000);
  });

  it('a server-streaming call gets every message in order, then status 0 (createSsl() trusting GRPC_DEFAULT_SSL_ROOTS_FILE_PATH)', async () => {
    const g = await start();
    // What `trajgate env` names: the bundle, the system's roots plus trajgate's CA.
    const trust = { env: { GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: join(ca.dir, CA_BUNDLE) } };
    const r = await call(g, 'Count', { count: 5 }, trust).done;
    expect(messages(r.lines)).toEqual([1, 2, 3, 4, 5].map((n) => `message ${n}`));
    expect(r.lines.at(-1)).toEqual({ status: { code: 0, details: 'OK' } });
    const [event] = events(g);
    expect(event).toMatchObject({ target: method('Count'), verdict: 'ALLOW' });
    expect(await outcome(g, event)).toMatchObject({ status: 200, grpcStatus: 0 });
  });

  it('a client-streaming call sends every message up (createSsl() trusting NODE_EXTRA_CA_CERTS)', async () => {
    const g = await start();
    const pings = ['a', 'b', 'c'].map((text) => ({ text }));
    const r = await call(g, 'Collect', pings, { env: { NODE_EXTRA_CA_CERTS: ca.certPath } }).done;
    expect(r.lines).toEqual([{ message: { text: 'a,b,c', n: 3 }, status: { code: 0 } }]);
  });

  it('a method nothing allows: PERMISSION_DENIED carrying the reason, a REVIEW, nothing sent', async () => {
    const g = await start();
    const before = up.calls.length;
    const r = await call(g, 'Fail', { code: 0 }).done;
    expect(r.lines).toHaveLength(1);
    const error = r.lines[0]?.error;
    expect(error?.code).toBe(7); // PERMISSION_DENIED
    expect(error?.details).toContain(`trajgate refused this request: POST ${method('Fail')}\n`);
    expect(error?.details).toContain(
      `Reason: unapproved network access to ${up.authority} (paths /trajgate.test.Echo/Unary,`,
    );
    expect(error?.details).toContain('it has been flagged for a person to review');
    expect(up.calls.length).toBe(before);
    const [event] = events(g);
    expect(event).toMatchObject({
      session: AGENT,
      method: 'POST',
      target: method('Fail'),
      verdict: 'REVIEW',
      boundary: 'network',
    });
    expect(await outcome(g, event)).toMatchObject({ status: 403 });
  });

  it('a non-OK status is a failure: the outcome says so, and drift-after-failure pauses on the next crossing', async () => {
    const g = await start({
      allow: [`POST ${method('Fail')}`],
      policy: { pause: 'block', sequences: [DRIFT_AFTER_FAILURE] },
    });
    const failed = await call(g, 'Fail', { code: 5, message: 'no such thing' }).done;
    expect(failed.lines).toEqual([
      { error: { code: 5, details: 'no such thing', message: '5 NOT_FOUND: no such thing' } },
    ]);
    const [event] = events(g);
    expect(await outcome(g, event)).toMatchObject({ status: 200, grpcStatus: 5, failed: true });
    const next = await call(g, 'Unary', { text: 'after' }).done;
    expect(next.lines[0]?.error?.code).toBe(7);
    expect(next.lines[0]?.error?.details).toContain('trajgate paused this session');
    expect(events(g).at(-1)).toMatchObject({
      target: method('Unary'),
      verdict: 'PAUSE',
      rule: { name: 'drift-after-failure' },
    });
  });
});

describe('a streaming call follows its session', () => {
  /** A held Count call that received its first message. */
  async function openStream(g: TestGateway): Promise<{ client: ClientCall; n: number }> {
    const n = up.held.length;
    const client = call(g, 'Count', { hold: true });
    await waitFor(() => up.held.length === n + 1, 20_000, 'the call reached the server');
    await up.held[n]?.send('message 1', 1);
    await client.until((l) => l.message?.text === 'message 1', 'message 1');
    return { client, n };
  }

  /** Two requests nothing allows: REVIEW, then PAUSE; the stream's flow freezes. */
  async function pause(g: TestGateway): Promise<void> {
    for (const path of ['/one', '/two']) {
      const res = await curl([
        '-x',
        g.proxyUrl,
        '-U',
        `${AGENT}:${AGENT_TOKEN}`,
        `${stranger.url}${path}`,
      ]);
      expect(res.status).toBe(403);
    }
    await waitFor(() => flows(g).some((f) => f.change === 'frozen'), 20_000, 'frozen');
  }

  const admin = (g: TestGateway) =>
    adminClient(g.gw.admin.port, generatedToken(g.gw.adminTokenFile));

  /** Whether a line matching `match` arrives within `ms`: for asserting that none does. */
  const arrivesWithin = (client: ClientCall, match: (l: ClientLine) => boolean, ms: number) =>
    waitFor(() => client.lines.some(match), ms).then(
      () => true,
      () => false,
    );

  it('paused: nothing more arrives, the end included; resumed: the rest arrives and the call ends OK', async () => {
    const g = await start();
    const { client, n } = await openStream(g);
    await pause(g);
    // Two messages and the trailers, each its own frame, all while the relay holds the stream.
    const stream = up.held[n];
    await stream?.send('message 2', 2);
    await stream?.send('message 3', 3);
    await stream?.end();
    expect(
      await arrivesWithin(
        client,
        (l) => l.message?.text === 'message 2' || l.status !== undefined,
        1_000,
      ),
    ).toBe(false);
    const resumed = await admin(g).post(`/api/sessions/${AGENT}/resume`, { reset: true });
    expect(resumed.status).toBe(200);
    const r = await client.done;
    expect(messages(r.lines)).toEqual(['message 1', 'message 2', 'message 3']);
    expect(r.lines.at(-1)).toEqual({ status: { code: 0, details: 'OK' } });
    const [event] = events(g);
    expect(await outcome(g, event)).toMatchObject({ status: 200, grpcStatus: 0 });
  });

  it('a deny ends a paused call with an error; what the server sent meanwhile never arrives', async () => {
    const g = await start();
    const { client, n } = await openStream(g);
    await pause(g);
    await up.held[n]?.send('message 2', 2);
    const denied = await admin(g).post(`/api/sessions/${AGENT}/deny`);
    expect(denied.status).toBe(200);
    const r = await client.done;
    expect(messages(r.lines)).toEqual(['message 1']);
    // The call ends with the reason as its status before its connection goes with the session.
    expect(r.lines.at(-1)?.status?.code).toBe(7);
    expect(r.lines.at(-1)?.status?.details).toContain('denied by an operator');
    expect(flows(g).map((f) => [f.flow, f.change, f.reason])).toEqual([
      ['request', 'frozen', 'session paused'],
      ['intercepted', 'frozen', 'session paused'],
      ['request', 'closed', 'denied by an operator'],
      ['intercepted', 'closed', 'denied by an operator'],
    ]);
  });

  it('a deny pattern ends a live call with PERMISSION_DENIED and the reason, as its trailers; its connection stays', async () => {
    const g = await start();
    const { client } = await openStream(g);
    const pattern = `POST ${method('Count')}`;
    const added = await admin(g).post(`/api/sessions/${AGENT}/denies`, { pattern });
    expect(added.status).toBe(201);
    const r = await client.done;
    expect(messages(r.lines)).toEqual(['message 1']);
    const status = r.lines.at(-1)?.status;
    expect(status?.code).toBe(7);
    expect(status?.details).toContain('trajgate closed this request');
    expect(flows(g).map((f) => [f.flow, f.change])).toEqual([['request', 'closed']]);
  });

  it('a quiet call outlives limits.upstreamTimeout, which still cuts a silent HTTP/2 request (504)', async () => {
    const g = await start({
      intercept: [up.authority, silent.authority],
      allow: [`POST ${method('Count')}`, `GET https://${silent.authority}/`],
      ports: [up.port, silent.port],
      limits: { upstreamTimeout: '300ms' },
    });
    const { client, n } = await openStream(g);
    const cut = await curl([
      '--http2',
      '--cacert',
      ca.certPath,
      '-x',
      g.proxyUrl,
      '-U',
      `${AGENT}:${AGENT_TOKEN}`,
      `https://${silent.authority}/slow`,
    ]);
    expect(cut.status).toBe(504);
    expect(cut.body).toBe(`trajgate: upstream ${silent.authority} timed out\n`);
    await up.held[n]?.send('message 2', 2);
    await up.held[n]?.end();
    const r = await client.done;
    expect(messages(r.lines)).toEqual(['message 1', 'message 2']);
    expect(r.lines.at(-1)).toEqual({ status: { code: 0, details: 'OK' } });
  });
});
