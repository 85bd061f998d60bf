import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { OutcomeRecord } from '../../src/journal/records.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { parseHead, roundTrip } from '../helpers/raw.js';
import type { InterceptOptions } from '../helpers/tls.js';
import { fixture, handshakeThrough, interceptConfig, makeLocalCa } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitForRecords } from '../helpers/wait.js';

/**
 * Intercepted requests forwarded to an HTTPS upstream over HTTP/1.1, on each engine: undici's
 * Agent (`node`) and the lean client (`lean`: H1Pool over connections from the same checked,
 * verified TLS connector). Both keep one upstream connection alive across an agent's requests,
 * and a refused certificate or a reset comes to the same answer and journal on both.
 */
const ca = makeLocalCa();
const up = await startUpstream({ tls: true });
const UP = `127.0.0.1:${up.port}`;

/** An HTTPS upstream (the test CA's certificate) that resets every connection it is sent. */
const resetting = createHttpsServer(
  { cert: readFileSync(fixture('server.pem')), key: readFileSync(fixture('server-key.pem')) },
  (req) => req.socket.destroy(),
);
await new Promise<void>((r) => resetting.listen(0, '127.0.0.1', r));
const RESET = `127.0.0.1:${(resetting.address() as AddressInfo).port}`;
afterAll(() => new Promise<void>((r) => resetting.close(() => r())));

const base: InterceptOptions = {
  ca,
  intercept: [UP, RESET],
  allow: [`GET https://${UP}/`, `GET https://${RESET}/`],
  ports: [up.port, Number(RESET.split(':')[1])],
  policy: { pause: 'block' },
};
const gateways = gatewayPerTest({});
const ENGINES = ['node', 'lean'] as const;
type Engine = (typeof ENGINES)[number];
const start = (engine: Engine, extra: Partial<InterceptOptions> = {}) =>
  gateways.start({ ...interceptConfig({ ...base, ...extra }), engine });

const GET = (host: string, path: string, close = false) =>
  `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;

/** A whole answer is in `got`: its head and as many body bytes as its Content-Length says. */
function whole(got: string): boolean {
  const end = got.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const length = Number(parseHead(got).headers['content-length'] ?? 0);
  return got.length >= end + 4 + length;
}

/** One GET through an intercepted tunnel to `authority`: status, reason line, outcome. */
async function oneGet(g: TestGateway, authority: string) {
  const hs = await handshakeThrough(g.gw.proxy.port, authority, { ca: ca.pem });
  if (!hs.ok) throw new Error(hs.error);
  const { got } = await roundTrip(hs.socket, GET(authority, '/x', true), () => false);
  const answer = parseHead(got);
  const [outcome] = (await waitForRecords(g, (r) => r.type === 'outcome')).filter(
    (r): r is OutcomeRecord => r.type === 'outcome',
  );
  return {
    status: answer.status,
    body: answer.body,
    outcome: { status: outcome?.status, error: outcome?.error },
  };
}

describe.each(ENGINES)('engine %s', (engine) => {
  it("an agent's sequential requests over one tunnel use one upstream TLS connection", async () => {
    const g = await start(engine);
    const before = { connections: up.connections, seen: up.seen.length };
    const hs = await handshakeThrough(g.gw.proxy.port, UP, { ca: ca.pem });
    if (!hs.ok) throw new Error(hs.error);
    const N = 5;
    for (let i = 0; i < N; i++) {
      const { got } = await roundTrip(hs.socket, GET(UP, `/r${i}`), whole);
      expect(parseHead(got).status).toBe(200);
      expect(JSON.parse(parseHead(got).body)).toMatchObject({ url: `/r${i}` });
    }
    hs.socket.destroy();
    expect(up.seen.length - before.seen).toBe(N);
    expect(up.connections - before.connections).toBe(1);
    const records = await waitForRecords(g, (r) => r.type === 'outcome', N);
    const statuses = records.filter((r): r is OutcomeRecord => r.type === 'outcome');
    expect(statuses.map((o) => o.status)).toEqual(Array(N).fill(200));
  });
});

describe('failures come to the same answer and journal on both engines', () => {
  const rows = [
    {
      name: 'an upstream certificate from a CA the gateway does not trust',
      to: UP,
      extra: { upstreamCa: false },
      error: /UNABLE_TO_VERIFY_LEAF_SIGNATURE|certificate/,
    },
    { name: 'an upstream that resets the connection', to: RESET, extra: {}, error: /./ },
  ];

  it.each(rows)('$name', async (row) => {
    const seen = up.seen.length;
    const answers = [];
    for (const engine of ENGINES) {
      const g = await start(engine, row.extra);
      answers.push(await oneGet(g, row.to));
      await g.stop();
      gateways.stopped();
    }
    const [node, lean] = answers;
    expect(node?.status).toBe(502);
    expect(node?.outcome.error).toMatch(row.error);
    expect(lean).toEqual(node);
    expect(up.seen.length).toBe(seen);
  });
});
