import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
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
import { agentToken } from '../helpers/ingest.js';
import { connectTunnel, roundTrip } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Volume counts every byte sent upstream. The request line and header section
 * count as the body does, so bodiless GETs with big headers cross a volume rule; a blind
 * tunnel's bytes count as they flow, so the rule fires while the tunnel is still open and the
 * tunnel freezes. Loopback only.
 */
const up = await startUpstream();
const echo = await startHeldEcho();
const upload = await startStreamingUpstream();
const UPLOAD = `127.0.0.1:${upload.port}`;
const AGENT = 'agent-1';
const TOKEN = agentToken(AGENT);
/** Each GET carries this much header; five of them pass 40 KB, four do not. */
const PAD = 'p'.repeat(8_000);

const { start, keep } = gatewayPerTest({
  agents: [{ id: AGENT, token: TOKEN }],
  network: {
    allow: [`127.0.0.1:${up.port}`, echo.authority, UPLOAD],
    allowPrivate: ['127.0.0.1/32'],
  },
});

const volumeRule = (upTo: string) => [
  { name: 'big-upload', volume: { up: upTo, within: '1h' }, verdict: 'PAUSE' },
];
/** The tunnels' limit: 100KB (1000-based). */
const LIMIT = 100_000;
const sequences = volumeRule('100KB');

const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

describe('volume rules count every byte sent up', () => {
  it('bodiless GETs with 8 KB of headers each pause the session past 40 KB', async () => {
    const g = await start({ policy: { pause: 'block', sequences: volumeRule('40KB') } });
    const get = (i: number) =>
      curl(['-x', g.proxyUrl, '-U', `${AGENT}:${TOKEN}`, '-H', `X-Pad: ${PAD}`, `${up.url}/${i}`]);
    const statuses: number[] = [];
    for (let i = 1; i <= 5; i++) statuses.push((await get(i)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    expect(up.seen.filter((r) => r.headers['x-pad'] === PAD && r.body === '')).toHaveLength(5);
    await waitFor(() => g.records().filter((r) => r.type === 'outcome').length === 5);
    const outcomes = g.records().filter((r): r is OutcomeRecord => r.type === 'outcome');
    for (const o of outcomes) {
      expect(o.bytesUp).toBeGreaterThan(PAD.length);
      expect(o.bytesUp).toBeLessThan(PAD.length + 1_000);
    }
    const sixth = await get(6);
    expect(sixth.status).toBe(403);
    expect(sixth.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=big-upload');
    expect(up.seen.some((r) => r.url === '/6')).toBe(false);
    expect(eventsOf(g.records(), AGENT).at(-1)).toMatchObject({
      target: `${up.url}/6`,
      verdict: 'PAUSE',
      boundary: 'big-upload',
      rule: { name: 'big-upload' },
    });
  });

  it('a blind tunnel sending 300 KB up against a 100KB limit freezes while still open; deny closes it', async () => {
    const g = await start({ policy: { pause: 'hold', holdTimeout: '30s', sequences } });
    const t = await openTunnel(g);
    const first = echo.received.length;
    t.socket.write(Buffer.alloc(300_000, 'v'));
    await waitFor(() => g.gw.sessions.isPaused(AGENT), 20_000, 'the volume rule to pause');
    const records = g.records();
    const again = eventsOf(records, AGENT).find((e) => e.rid === t.admitted.seq);
    expect(again).toMatchObject({
      target: echo.authority,
      verdict: 'PAUSE',
      boundary: 'big-upload',
      rule: { name: 'big-upload' },
    });
    expect(records.some((r) => r.type === 'pause' && r.boundary === 'big-upload')).toBe(true);
    expect(flowRecords(records)).toEqual([
      expect.objectContaining({ type: 'tunnel', rid: t.admitted.seq, change: 'frozen' }),
    ]);
    // Still open, so no outcome yet: the rule saw the bytes as they flowed.
    expect(records.some((r) => r.type === 'outcome')).toBe(false);
    expect(t.socket.destroyed).toBe(false);
    // Frozen: nothing written after the freeze passes either way.
    t.socket.write('Z'.repeat(1_000));
    t.upstream.write('pushed');
    await quietFor(t.socket, 400);
    expect(echo.received.includes('Z')).toBe(false);
    expect(t.back().includes('pushed')).toBe(false);
    // At most one report step (16 KiB) past the limit went up before the rule fired.
    expect(echo.received.length - first).toBeLessThan(LIMIT + 16 * 1024);
    const closed = new Promise<void>((r) => t.socket.once('close', () => r()));
    g.gw.sessions.deny(AGENT);
    await closed;
    expect(flowRecords(g.records()).map((r) => [r.change, r.reason])).toEqual([
      ['frozen', 'session paused'],
      ['closed', 'denied by an operator'],
    ]);
    // The re-judged event carries the bytes counted when it fired: offline it pauses too.
    expect(again?.sentUp).toBeGreaterThanOrEqual(LIMIT);
    const config = join(tempDir(), 'replay.yaml');
    writeFileSync(
      config,
      stringify({ version: 1, agents: [{ id: AGENT, token: TOKEN }], policy: { sequences } }),
    );
    const verdicts = await replayVerdicts(g.journalPath, config);
    expect(verdicts.live).toEqual([
      ['ALLOW', null],
      ['PAUSE', 'big-upload'],
    ]);
    expect(verdicts.again).toEqual(verdicts.live);
  });

  it('a streaming upload freezes mid-body past the limit; deny refuses it, the rest never sent', async () => {
    const g = await start({ policy: { pause: 'hold', holdTimeout: '30s', sequences } });
    const socket = connect({ host: '127.0.0.1', port: g.gw.proxy.port });
    socket.on('error', () => undefined);
    sockets.push(socket);
    const i = upload.bodies.length;
    const body = 300_000;
    socket.write(
      `POST http://${UPLOAD}/bulk HTTP/1.1\r\nHost: ${UPLOAD}\r\n` +
        `Proxy-Authorization: ${proxyBasic(AGENT, TOKEN)}\r\n` +
        `Transfer-Encoding: chunked\r\n\r\n${chunk('u'.repeat(body))}`,
    );
    await waitFor(() => g.gw.sessions.isPaused(AGENT), 20_000, 'the volume rule to pause');
    const admitted = eventsOf(g.records(), AGENT)[0] as EventRecord;
    expect(admitted).toMatchObject({ target: `http://${UPLOAD}/bulk`, verdict: 'ALLOW' });
    expect(eventsOf(g.records(), AGENT).find((e) => e.rid === admitted.seq)).toMatchObject({
      verdict: 'PAUSE',
      boundary: 'big-upload',
    });
    expect(flowRecords(g.records())).toEqual([
      expect.objectContaining({
        type: 'flow',
        flow: 'request',
        rid: admitted.seq,
        change: 'frozen',
      }),
    ]);
    // Frozen short of its end: what was relayed before the freeze may still be on its way.
    expect(upload.bodies[i]?.length ?? 0).toBeLessThan(body);
    const answer = roundTrip(socket, '0\r\n\r\n', (got) => got.includes('\r\n\r\n'));
    g.gw.sessions.deny(AGENT);
    expect((await answer).got).toMatch(/^HTTP\/1\.1 403 /);
    // The upstream's request is cut short: it never reads the rest, nor the body's end.
    expect(await upload.ended(i)).toBe('cut short');
    expect(upload.bodies[i]?.length ?? 0).toBeLessThan(body);
    expect(flowRecords(g.records()).map((r) => [r.change, r.reason])).toEqual([
      ['frozen', 'session paused'],
      ['closed', 'denied by an operator'],
    ]);
  });

  it('a resume forgives what was reviewed: the tunnel goes on, counted from the resume', async () => {
    const g = await start({ policy: { pause: 'hold', holdTimeout: '30s', sequences } });
    const t = await openTunnel(g);
    const first = echo.received.length;
    t.socket.write(Buffer.alloc(150_000, 'v'));
    await waitFor(() => g.gw.sessions.isPaused(AGENT), 20_000, 'the volume rule to pause');
    g.gw.sessions.resume(AGENT);
    // Less than the limit since the resume, though the tunnel's total passes it again.
    t.socket.write(Buffer.alloc(40_000, 'w'));
    await waitFor(() => echo.received.length - first === 190_000, 20_000, 'every byte to arrive');
    expect(g.gw.sessions.isPaused(AGENT)).toBe(false);
    expect(flowRecords(g.records()).map((r) => r.change)).toEqual(['frozen', 'thawed']);
    expect((await roundTrip(t.socket, 'more', (got) => got.endsWith('more'))).got).toMatch(/more$/);
  });
});

/** A blind tunnel to the echo server as the agent, its event, and what comes back on it. */
async function openTunnel(g: TestGateway) {
  const auth = { 'Proxy-Authorization': proxyBasic(AGENT, TOKEN) };
  const t = keep(await connectTunnel(g.gw.proxy.port, echo.authority, auth));
  expect(t.status).toBe(200);
  const admitted = eventsOf(g.records(), AGENT).find((e) => e.target === echo.authority);
  expect(admitted).toMatchObject({ verdict: 'ALLOW', approved: true });
  let back = '';
  t.socket.setEncoding('latin1');
  // The echo is read as it comes, so that only the rule holds the tunnel back.
  t.socket.on('data', (d: string) => (back += d));
  return {
    socket: t.socket,
    admitted: admitted as EventRecord,
    upstream: echo.sockets.at(-1) as Socket,
    back: () => back,
  };
}
