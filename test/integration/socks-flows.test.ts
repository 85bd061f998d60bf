import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { JournalRecord, OutcomeRecord, RefusalRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import { flowRecords, quietFor, startHeldEcho } from '../helpers/flows.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { roundTrip } from '../helpers/raw.js';
import { SOCKS_LISTEN, socksAt, socksRaw, socksTunnel } from '../helpers/socks.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * SOCKS5 tunnels are flows and hold slots as CONNECT tunnels do: they follow their session
 * (held, frozen, thawed), are cut at a stop's drain deadline, and count against the limits.
 */
const upstream = await startUpstream();
const echo = await startHeldEcho();
const { start, keep, stopped } = gatewayPerTest({
  listen: SOCKS_LISTEN,
  network: { allow: [echo.authority], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
});
const outcomes = (records: JournalRecord[]) =>
  records.filter((r): r is OutcomeRecord => r.type === 'outcome');
const refusals = (records: JournalRecord[]) =>
  records.filter((r): r is RefusalRecord => r.type === 'refusal');

describe('SOCKS5 tunnels follow their session and the limits', () => {
  it('a pause freezes an open SOCKS tunnel, a resume thaws it: journaled as a CONNECT flow', async () => {
    const g = await start();
    const t = await socksTunnel(g.gw.socks?.port ?? 0, '127.0.0.1', echo.server.port);
    const socket: Socket = keep({ socket: t.socket, status: 0, headers: {}, rest: '' }).socket;
    expect(t.reply).toBe(0);
    expect((await roundTrip(socket, 'hello', (got) => got === 'hello')).got).toBe('hello');
    // Two unapproved requests through SOCKS: REVIEW, then PAUSE (blocked).
    for (const path of ['one', 'two'])
      await curl(['--socks5-hostname', socksAt(g), `http://127.0.0.2:${upstream.port}/${path}`]);
    expect(g.gw.sessions.isPaused('127.0.0.1')).toBe(true);
    await waitFor(() => flowRecords(g.records()).some((r) => r.change === 'frozen'));
    expect(flowRecords(g.records())[0]).toMatchObject({
      target: echo.authority,
      change: 'frozen',
      reason: 'session paused',
    });
    const before = echo.received.length;
    socket.write('while-paused');
    expect(await quietFor(socket, 400)).toBe('');
    expect(echo.received.length).toBe(before);
    g.gw.sessions.resume('127.0.0.1');
    const thawed = await roundTrip(socket, '', (got) => got === 'while-paused');
    expect(thawed.got).toBe('while-paused');
  });

  it('asked while its session is paused: held with no reply, answered once resumed', async () => {
    const g = await start({ policy: { pause: 'hold', holdTimeout: '30s' } });
    const stranger = `http://127.0.0.2:${upstream.port}`;
    await curl(['--socks5-hostname', socksAt(g), `${stranger}/one`]);
    const second = curl(['--socks5-hostname', socksAt(g), `${stranger}/two`]);
    await waitFor(() => g.gw.sessions.held('127.0.0.1').length === 1);
    let answered = false;
    const pending = socksTunnel(g.gw.socks?.port ?? 0, '127.0.0.1', echo.server.port).then((t) => {
      answered = true;
      return t;
    });
    await waitFor(() => g.gw.sessions.held('127.0.0.1').length === 2);
    expect(answered).toBe(false);
    g.gw.sessions.resume('127.0.0.1', { reset: true });
    const t = await pending;
    keep({ socket: t.socket, status: 0, headers: {}, rest: '' });
    expect(t.reply).toBe(0);
    expect((await roundTrip(t.socket, 'after', (got) => got === 'after')).got).toBe('after');
    // Judged again on resume: still unapproved, refused with 0x02.
    expect((await second).stderr).toMatch(/\(2\)/);
  });

  it('a stop cuts an open SOCKS tunnel at the drain deadline and journals its outcome', async () => {
    const g = await start({ limits: { drainTimeout: '300ms' } });
    const t = await socksTunnel(g.gw.socks?.port ?? 0, '127.0.0.1', echo.server.port);
    expect((await roundTrip(t.socket, 'x', (got) => got === 'x')).got).toBe('x');
    const closed = new Promise<void>((r) => t.socket.once('close', () => r()));
    await g.stop();
    stopped();
    await closed;
    const outcome = outcomes(g.records()).at(-1);
    expect(outcome).toMatchObject({ status: 200, bytesUp: 1, bytesDown: 1, via: 'socks' });
  });

  it('limits.maxConnections caps the SOCKS connections open at once: one more is closed', async () => {
    const g = await start({ limits: { maxConnections: 1 } });
    const t = await socksTunnel(g.gw.socks?.port ?? 0, '127.0.0.1', echo.server.port);
    keep({ socket: t.socket, status: 0, headers: {}, rest: '' });
    expect(t.reply).toBe(0);
    const more = await socksRaw(g.gw.socks?.port ?? 0, Buffer.from([5, 1, 0]));
    expect(more.closed).toBe(true);
    expect(more.got.length).toBe(0);
    t.socket.destroy();
    await waitFor(() => outcomes(g.records()).length === 1);
    const again = await socksTunnel(g.gw.socks?.port ?? 0, '127.0.0.1', echo.server.port);
    keep({ socket: again.socket, status: 0, headers: {}, rest: '' });
    expect(again.reply).toBe(0);
  });

  it('limits.tunnelsPerSession counts SOCKS tunnels: one more gets 0x01 and a 429 record', async () => {
    const g = await start({ limits: { tunnelsPerSession: 1 } });
    const t = await socksTunnel(g.gw.socks?.port ?? 0, '127.0.0.1', echo.server.port);
    keep({ socket: t.socket, status: 0, headers: {}, rest: '' });
    expect(t.reply).toBe(0);
    const more = await socksTunnel(g.gw.socks?.port ?? 0, '127.0.0.1', echo.server.port);
    expect(more.reply).toBe(1);
    const records = await waitForRecords(g, (x) => x.type === 'refusal');
    expect(refusals(records)[0]).toMatchObject({
      status: 429,
      via: 'socks',
      session: '127.0.0.1',
      method: 'CONNECT',
      target: echo.authority,
    });
    expect(refusals(records)[0]?.reason).toMatch(/limits\.tunnelsPerSession/);
  });
});
