import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { EventRecord, PauseJournalRecord } from '../../src/journal/records.js';
import {
  chunk,
  eventsOf,
  flowRecords,
  proxyBasic,
  quietFor,
  replayVerdicts,
  startHeldEcho,
  startStreamingUpstream,
} from '../helpers/flows.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { agentToken, postAsAgent } from '../helpers/ingest.js';
import { connectTunnel, roundTrip } from '../helpers/raw.js';
import { DRIFT_AFTER_FAILURE, secretThenEgress } from '../helpers/rules.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Rules reach open channels. A blind tunnel and a streaming upload admitted
 * before the agent reads a secret are judged again the moment the read is decided: the
 * sequence rule pauses the session, the channel freezes both ways before the read is answered,
 * a resume thaws it and a deny closes it. The read comes through the ingest route as the same
 * agent, so proxy traffic and tool events share one trajectory. Loopback only.
 */
const echo = await startHeldEcho();
const upload = await startStreamingUpstream();
const UPLOAD = `127.0.0.1:${upload.port}`;
const AGENT = 'agent-1';
const AUTH = { 'Proxy-Authorization': proxyBasic(AGENT, agentToken(AGENT)) };
const SECRET = join(tempDir(), 'home', '.ssh', 'id_rsa');

const CONFIG = {
  agents: [{ id: AGENT, token: agentToken(AGENT) }],
  network: { allow: [echo.authority, UPLOAD], allowPrivate: ['127.0.0.1/32'] },
  policy: {
    pause: 'hold',
    holdTimeout: '30s',
    sequences: [secretThenEgress()],
  },
};
const { start, keep } = gatewayPerTest(CONFIG);

const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

/** The agent reads the secret through the ingest route: allowed, and it sets the mark. */
async function readSecret(g: TestGateway): Promise<EventRecord> {
  const bridge = `http://127.0.0.1:${g.gw.bridge.port}/events`;
  const read = await postAsAgent(bridge, AGENT, { kind: 'read', target: SECRET });
  expect(read.status).toBe(200);
  expect(read.json.verdict).toBe('ALLOW');
  const marking = eventsOf(g.records(), AGENT).find((e) => e.kind === 'read');
  expect(marking?.marks).toEqual(['secret-then-egress']);
  return marking as EventRecord;
}

/**
 * What the read did to the open flow whose event is `admitted`, as journaled by the time the
 * read was answered: its event judged again (PAUSE by the rule, after the read), the pause
 * record naming it, and the flow's `frozen` record, in that order.
 */
function expectRejudged(g: TestGateway, admitted: EventRecord, marking: EventRecord) {
  const records = g.records();
  const again = eventsOf(records, AGENT).find((e) => e.rid === admitted.seq && e.seq > marking.seq);
  expect(again).toMatchObject({
    kind: 'network',
    target: admitted.target,
    verdict: 'PAUSE',
    boundary: 'secret-then-egress',
    rule: { name: 'secret-then-egress', after: marking.seq },
  });
  const pause = records.find((r): r is PauseJournalRecord => r.type === 'pause');
  expect(pause).toMatchObject({ session: AGENT, boundary: 'secret-then-egress' });
  expect(pause?.seq).toBeGreaterThan(again?.seq as number);
  expect(flowRecords(records)).toEqual([
    expect.objectContaining({ rid: admitted.seq, change: 'frozen', reason: 'session paused' }),
  ]);
  expect(flowRecords(records)[0]?.seq).toBeGreaterThan(pause?.seq as number);
  expect(g.gw.sessions.isPaused(AGENT)).toBe(true);
}

async function openEchoTunnel(g: TestGateway): Promise<{ socket: Socket; event: EventRecord }> {
  const t = keep(await connectTunnel(g.gw.proxy.port, echo.authority, AUTH));
  expect(t.status).toBe(200);
  expect((await roundTrip(t.socket, 'hello', (got) => got === 'hello')).got).toBe('hello');
  const event = eventsOf(g.records(), AGENT).find((e) => e.target === echo.authority);
  expect(event).toMatchObject({ verdict: 'ALLOW', approved: true });
  return { socket: t.socket, event: event as EventRecord };
}

describe('a secret read reaches channels opened before it', () => {
  it('an open blind tunnel freezes both ways, journaled before the read is answered; resume thaws it', async () => {
    const g = await start();
    const { socket, event } = await openEchoTunnel(g);
    const upstream = echo.sockets.at(-1) as Socket;
    const marking = await readSecret(g);
    expectRejudged(g, event, marking);
    expect(flowRecords(g.records())[0]).toMatchObject({ type: 'tunnel', flow: 'connect' });
    const before = echo.received.length;
    socket.write('the-secret');
    upstream.write('pushed');
    expect(await quietFor(socket, 400)).toBe('');
    expect(echo.received.length).toBe(before);
    g.gw.sessions.resume(AGENT);
    const r = await roundTrip(
      socket,
      '',
      (got) => got.includes('pushed') && got.includes('the-secret'),
    );
    expect(r.got).toContain('pushed');
    expect(echo.received.slice(before)).toBe('the-secret');
    expect(flowRecords(g.records()).map((t) => t.change)).toEqual(['frozen', 'thawed']);
  });

  it('deny closes the tunnel the read froze', async () => {
    const g = await start();
    const { socket, event } = await openEchoTunnel(g);
    const marking = await readSecret(g);
    expectRejudged(g, event, marking);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    g.gw.sessions.deny(AGENT);
    await closed;
    expect(flowRecords(g.records()).at(-1)).toMatchObject({
      rid: event.seq,
      change: 'closed',
      reason: 'denied by an operator',
    });
    // Offline, the journal decides the same: the re-judged event pauses after the read.
    const config = join(tempDir(), 'replay.yaml');
    writeFileSync(config, stringify({ version: 1, ...CONFIG }));
    const { live, again } = await replayVerdicts(g.journalPath, config);
    expect(live).toEqual([
      ['ALLOW', null],
      ['ALLOW', null],
      ['PAUSE', 'secret-then-egress'],
    ]);
    expect(again).toEqual(live);
  });

  it('with policy.pause: block the rule closes the tunnel at once, with its reason', async () => {
    const g = await start({ policy: { ...CONFIG.policy, pause: 'block' } });
    const { socket, event } = await openEchoTunnel(g);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    const marking = await readSecret(g);
    const again = eventsOf(g.records(), AGENT).find((e) => e.rid === event.seq);
    expect(again).toMatchObject({ verdict: 'PAUSE', rule: { name: 'secret-then-egress' } });
    expect(flowRecords(g.records()).map((r) => [r.rid, r.change])).toEqual([
      [event.seq, 'frozen'],
      [event.seq, 'closed'],
    ]);
    expect(flowRecords(g.records())[1]?.reason).toContain(`after #${marking.seq} read ${SECRET}`);
    await closed;
  });

  it('a streaming upload mid-body freezes: later chunks do not reach the upstream until resumed', async () => {
    const g = await start();
    const head =
      `POST http://${UPLOAD}/upload HTTP/1.1\r\nHost: ${UPLOAD}\r\n` +
      `Proxy-Authorization: ${AUTH['Proxy-Authorization']}\r\n` +
      'Transfer-Encoding: chunked\r\n\r\n';
    const requests = upload.bodies.length;
    const arrived = upload.next(requests, 5_000);
    const socket = connect({ host: '127.0.0.1', port: g.gw.proxy.port });
    socket.on('error', () => undefined);
    sockets.push(socket);
    socket.write(head + chunk('first;'));
    expect(await arrived).toBe('first;');
    const event = eventsOf(g.records(), AGENT).find((e) => e.target.endsWith('/upload'));
    expect(event).toMatchObject({ verdict: 'ALLOW', approved: true });
    const marking = await readSecret(g);
    expectRejudged(g, event as EventRecord, marking);
    expect(flowRecords(g.records())[0]).toMatchObject({ type: 'flow', flow: 'request' });
    socket.write(chunk('second;'));
    expect(await upload.next(requests, 400)).toBe('');
    expect(upload.bodies[requests]).toBe('first;');
    const resumed = upload.next(requests, 5_000);
    g.gw.sessions.resume(AGENT);
    expect(await resumed).toBe('second;');
    const answer = await roundTrip(socket, '0\r\n\r\n', (got) => got.includes('bytes\n'));
    expect(answer.got).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.got).toContain('got 13 bytes');
    expect(flowRecords(g.records()).map((t) => t.change)).toEqual(['frozen', 'thawed']);
  });
});

describe("a runner's failure reaches channels opened before it", () => {
  it('a failed result sets the mark, and the open tunnel freezes before the result is answered', async () => {
    const command = join(tempDir(), 'build');
    const g = await start({
      workspace: join(command, '..'),
      policy: {
        pause: 'hold',
        holdTimeout: '30s',
        // Any network event (the echo tunnel is allowed, not a crossing), after a command's failure.
        sequences: [
          {
            ...DRIFT_AFTER_FAILURE,
            after: { kind: 'command', failed: true },
            then: { kind: 'network' },
            within: '1h',
          },
        ],
      },
    });
    const { socket, event } = await openEchoTunnel(g);
    const bridge = `http://127.0.0.1:${g.gw.bridge.port}/events`;
    expect((await postAsAgent(bridge, AGENT, { kind: 'command', target: command })).status).toBe(
      200,
    );
    const failed = await postAsAgent(`${bridge}/result`, AGENT, {
      kind: 'command',
      target: command,
      ok: false,
      error: 'exit 1',
    });
    expect(failed.status).toBe(200);
    // By the time the result is answered, the tunnel's event is judged again and it is frozen.
    const again = eventsOf(g.records(), AGENT).find((e) => e.rid === event.seq);
    expect(again).toMatchObject({ verdict: 'PAUSE', boundary: 'drift-after-failure' });
    expect(flowRecords(g.records())).toEqual([
      expect.objectContaining({ rid: event.seq, change: 'frozen' }),
    ]);
    socket.write('after-failure');
    await quietFor(socket, 400);
    expect(echo.received.includes('after-failure')).toBe(false);
  });
});
