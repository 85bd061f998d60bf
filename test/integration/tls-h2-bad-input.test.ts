import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { h2Request, h2Through } from '../helpers/h2.js';
import {
  bodyOf,
  ERROR,
  FLAG,
  FRAME,
  frame,
  goAwayOf,
  headerBlock,
  headers,
  OPENING,
  rawH2,
  request,
  resetsOf,
  rstStream,
  settings,
  staticStatusOf,
} from '../helpers/h2-frames.js';
import type { RawH2 } from '../helpers/h2-frames.js';
import { interceptPerTest, makeLocalCa, refusals } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitForRecords } from '../helpers/wait.js';

/**
 * Bad HTTP/2 from an agent inside intercepted TLS, written frame by frame (helpers/h2-frames):
 * malformed frames, floods, rapid reset, header sections RFC 9113 § 8.2 forbids. Each gets a
 * refusal the client can read (GOAWAY with an error code and trajgate's reason as debug data,
 * or RST_STREAM on the one stream), exactly one journal record for the connection or stream,
 * bounded work, and the gateway serves the next client. Loopback only; every loop is bounded.
 */
const ca = makeLocalCa();
const up = await startUpstream({ tls: true });
const UP = `127.0.0.1:${up.port}`;
const SESSION = '127.0.0.1';
const start = interceptPerTest({
  ca,
  intercept: [UP],
  allow: [`GET https://${UP}/`],
  ports: [up.port],
  policy: { pause: 'block' },
});

const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');

async function open(g: TestGateway): Promise<RawH2> {
  return rawH2(g.gw.proxy.port, UP, ca.pem);
}

/**
 * The next client is served (a GET through Node's http2 client, 200), and its outcome is
 * journaled: after it, no record of the bad connection can still be on its way.
 */
async function nextClientServed(g: TestGateway): Promise<void> {
  const { session } = await h2Through(g.gw.proxy.port, UP, ca.pem);
  const res = await h2Request(session, { ':path': '/next' });
  session.close();
  expect(res.status).toBe(200);
  const next = events(g).find((e) => e.target === `https://${UP}/next`);
  await waitForRecords(g, (r) => r.type === 'outcome' && r.rid === next?.seq);
}

/** Waits for the server's GOAWAY and the connection's end. */
async function cut(raw: RawH2) {
  await raw.until((frames) => raw.closed && goAwayOf(frames) !== undefined);
  return goAwayOf(raw.frames);
}

/**
 * Writes `unit` up to `max` times in batches, a turn apart, until the gateway cuts the
 * connection; returns how many went. The gateway is in this process: a bounded count shows it
 * stopped reading, and its heap is measured around the flood.
 */
async function flood(
  raw: RawH2,
  unit: (i: number) => Buffer,
  max: number,
  reads: boolean,
): Promise<number> {
  let sent = 0;
  // An attacker that reads nothing leaves what the gateway answers to pile up on its side.
  if (!reads) raw.socket.pause();
  while (sent < max && !raw.closed) {
    const batch = Buffer.concat(Array.from({ length: 200 }, (_, i) => unit(sent + i)));
    if (!raw.send(batch)) break;
    sent += 200;
    await new Promise<void>((resolve) => {
      if (!raw.socket.writableNeedDrain) return setImmediate(resolve);
      raw.socket.once('drain', resolve);
      raw.socket.once('close', resolve);
    });
  }
  raw.socket.resume();
  await raw.until(() => raw.closed);
  return sent;
}

describe('malformed frames end the connection with GOAWAY and one refusal', () => {
  const cases: { name: string; bytes: () => Buffer; code: number; reason: RegExp }[] = [
    {
      name: 'an HTTP/1.1 request instead of the connection preface',
      bytes: () => Buffer.from(`GET / HTTP/1.1\r\nHost: ${UP}\r\n\r\n`),
      code: ERROR.PROTOCOL_ERROR,
      reason:
        /^HTTP\/2 connection preface expected \(PRI \* HTTP\/2\.0, RFC 9113 § 3\.4\), the agent sent "GET \/ HTTP\/1\.1\\r\\nHost: /,
    },
    {
      name: 'DATA on stream 0',
      bytes: () => Buffer.concat([OPENING, frame(FRAME.DATA, 0, 0, Buffer.from('hi'))]),
      code: ERROR.PROTOCOL_ERROR,
      reason:
        /^HTTP\/2 connection error PROTOCOL_ERROR \(RFC 9113 § 5\.4\.1\): DATA: stream_id == 0$/,
    },
    {
      name: 'a frame larger than SETTINGS_MAX_FRAME_SIZE (16384)',
      bytes: () => Buffer.concat([OPENING, frame(FRAME.DATA, 0, 1, Buffer.alloc(20_000))]),
      code: ERROR.FRAME_SIZE_ERROR,
      reason:
        /^HTTP\/2 connection error FRAME_SIZE_ERROR \(RFC 9113 § 5\.4\.1\): too large frame size$/,
    },
    {
      name: 'a SETTINGS frame whose length is not a multiple of 6',
      bytes: () => Buffer.concat([OPENING, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(7))]),
      code: ERROR.FRAME_SIZE_ERROR,
      reason:
        /^HTTP\/2 connection error FRAME_SIZE_ERROR \(RFC 9113 § 5\.4\.1\): a frame over SETTINGS_MAX_FRAME_SIZE or of the wrong length for its type/,
    },
  ];
  for (const c of cases) {
    it(`${c.name}: GOAWAY ${c.code} with the reason, one refusal, the next client served`, async () => {
      const g = await start();
      const raw = await open(g);
      raw.send(c.bytes());
      const goAway = await cut(raw);
      expect(goAway).toMatchObject({ code: c.code, lastStream: 0 });
      expect(goAway?.debug).toMatch(c.reason);
      await nextClientServed(g);
      const all = refusals(g.records());
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({ session: SESSION, status: 400, target: UP });
      expect(all[0]?.reason).toMatch(c.reason);
      expect(goAway?.debug).toBe(all[0]?.reason.slice(0, 512));
      expect(events(g).map((e) => e.target)).toEqual([`https://${UP}/next`]);
    });
  }
});

describe('floods are cut after a bounded count, with one refusal', () => {
  const cases: {
    name: string;
    opening: () => Buffer;
    unit: (i: number) => Buffer;
    reason: RegExp;
    /** The GOAWAY the client reads (none when it does not read, as the attack goes). */
    code?: number;
  }[] = [
    {
      name: 'SETTINGS flood',
      opening: () => OPENING,
      unit: () => settings([[0x4, 65_535]]),
      reason:
        /^HTTP\/2 SETTINGS flood: more than 100 SETTINGS frames on one connection \(CVE-2019-9515\)$/,
      code: ERROR.ENHANCE_YOUR_CALM,
    },
    {
      name: 'CONTINUATION flood after HEADERS without END_HEADERS (CVE-2024-27316 class)',
      opening: () => Buffer.concat([OPENING, headers(1, request(UP, '/'), { endHeaders: false })]),
      unit: () => frame(FRAME.CONTINUATION, 0, 1, headerBlock([['x-filler', 'y'.repeat(100)]])),
      reason: /Too many CONTINUATION frames following a HEADER frame/,
    },
    {
      name: 'rapid reset: HEADERS then RST_STREAM, over and over (CVE-2023-44487 class)',
      opening: () => OPENING,
      unit: (i) => {
        const id = 1 + 2 * i;
        return Buffer.concat([headers(id, request(UP, `/r${i}`)), rstStream(id)]);
      },
      reason:
        /^HTTP\/2 rapid reset: more than 100 streams reset by the agent before they were answered \(CVE-2023-44487\)$/,
      code: ERROR.ENHANCE_YOUR_CALM,
    },
  ];
  for (const c of cases) {
    it(`${c.name}: cut, one refusal, heap bounded, the next client served`, async () => {
      const g = await start();
      const raw = await open(g);
      raw.send(c.opening());
      const heap = process.memoryUsage().heapUsed;
      const max = 50_000;
      const sent = await flood(raw, c.unit, max, c.code !== undefined);
      expect(sent).toBeLessThan(max);
      expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 * 1024 * 1024);
      if (c.code !== undefined) {
        expect(goAwayOf(raw.frames)).toMatchObject({ code: c.code });
        expect(goAwayOf(raw.frames)?.debug).toBe(refusals(g.records())[0]?.reason);
      }
      await nextClientServed(g);
      const all = refusals(g.records());
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({ session: SESSION, status: 400, target: UP });
      expect(all[0]?.reason).toMatch(c.reason);
    });
  }
});

describe('header sections RFC 9113 § 8.2 forbids reset their stream, with one refusal each', () => {
  const cases: { name: string; fields: [string, string][] }[] = [
    { name: 'an upper-case field name', fields: request(UP, '/u', [['X-Upper', 'v']]) },
    { name: 'connection: keep-alive', fields: request(UP, '/c', [['connection', 'keep-alive']]) },
    {
      name: 'transfer-encoding: chunked',
      fields: request(UP, '/t', [['transfer-encoding', 'chunked']]),
    },
    { name: 'te: gzip', fields: request(UP, '/te', [['te', 'gzip']]) },
    {
      name: 'no :path',
      fields: [
        [':method', 'GET'],
        [':scheme', 'https'],
        [':authority', UP],
      ],
    },
  ];
  for (const c of cases) {
    it(`${c.name}: RST_STREAM PROTOCOL_ERROR, one refusal, the connection still serves`, async () => {
      const g = await start();
      const raw = await open(g);
      const seen = up.seen.length;
      raw.send(Buffer.concat([OPENING, headers(1, c.fields)]));
      await raw.until((frames) => resetsOf(frames, 1).length > 0);
      raw.send(headers(3, request(UP, '/after')));
      await raw.until((frames) =>
        frames.some(
          (f) => f.type === FRAME.DATA && f.stream === 3 && (f.flags & FLAG.END_STREAM) !== 0,
        ),
      );
      expect(resetsOf(raw.frames, 1)).toEqual([ERROR.PROTOCOL_ERROR]);
      expect(staticStatusOf(raw.frames, 3)).toBe(200);
      expect(JSON.parse(bodyOf(raw.frames, 3))).toMatchObject({ url: '/after' });
      expect(goAwayOf(raw.frames)).toBeUndefined();
      expect(up.seen.length).toBe(seen + 1);
      raw.socket.destroy();
      await nextClientServed(g);
      const all = refusals(g.records());
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({ session: SESSION, status: 400, target: UP });
      expect(all[0]?.reason).toMatch(
        /^HTTP\/2 stream 1: malformed request, reset with PROTOCOL_ERROR \(RFC 9113 § 8\.1\.1, § 8\.2: /,
      );
      expect(events(g).map((e) => e.target)).toEqual([`https://${UP}/after`, `https://${UP}/next`]);
    });
  }

  it('te: trailers is allowed (RFC 9113 § 8.2.2)', async () => {
    const g = await start();
    const raw = await open(g);
    raw.send(Buffer.concat([OPENING, headers(1, request(UP, '/te-ok', [['te', 'trailers']]))]));
    await raw.until((frames) =>
      frames.some(
        (f) => f.type === FRAME.DATA && f.stream === 1 && (f.flags & FLAG.END_STREAM) !== 0,
      ),
    );
    raw.socket.destroy();
    expect(staticStatusOf(raw.frames, 1)).toBe(200);
    expect(refusals(g.records())).toEqual([]);
  });
});

describe('an agent that leaves mid-connection', () => {
  it('closing right after its answer, or right after its request: no refusal, no crash, the next client served', async () => {
    const g = await start();
    for (let i = 0; i < 20; i++) {
      const raw = await open(g);
      raw.send(Buffer.concat([OPENING, headers(1, request(UP, `/left${i}`))]));
      if (i % 2 === 0)
        await raw.until((frames) => frames.some((f) => f.type === FRAME.DATA && f.stream === 1));
      raw.socket.destroy();
    }
    await nextClientServed(g);
    expect(refusals(g.records())).toEqual([]);
  });
});
