import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RefusalRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { connectTunnel, exchange, roundTrip, startUpgradeServer } from '../helpers/raw.js';
import { handshakeThrough, makeLocalCa, requestOn, startInterceptGateway } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Method overrides (X-HTTP-Method-Override and kin, `_method` in the query) would turn an
 * allowed POST into a DELETE at an upstream that honours them, so they are refused on every
 * path: absolute-form on the listener, plain HTTP inside a CONNECT, intercepted TLS, and an
 * Upgrade. One gateway for the file; loopback upstreams only.
 */
const ca = makeLocalCa();
const plain = await startUpstream();
const secure = await startUpstream({ tls: true });
const upgrades = await startUpgradeServer();
const PLAIN = `127.0.0.1:${plain.port}`;
const SECURE = `127.0.0.1:${secure.port}`;
const UPGRADE = `127.0.0.1:${upgrades.port}`;
let g: TestGateway;

beforeAll(async () => {
  g = await startInterceptGateway({
    ca,
    intercept: [SECURE],
    // Method patterns only: a CONNECT to PLAIN is read request by request, never blind.
    allow: [
      `GET ${PLAIN}`,
      `POST ${PLAIN}`,
      `GET https://${SECURE}/`,
      `POST https://${SECURE}/`,
      `GET ${UPGRADE}`,
    ],
    ports: [plain.port, secure.port, upgrades.port],
  });
});
afterAll(() => g.stop());

const refusals = () => g.records().filter((r): r is RefusalRecord => r.type === 'refusal');

type Path = 'listener' | 'tunnel' | 'tls';
const PATHS: readonly Path[] = ['listener', 'tunnel', 'tls'];

/** Sends `POST <path+query>` with `fields` through `path`; the answer once trajgate closes. */
async function post(path: Path, query: string, fields: string): Promise<{ status: number }> {
  const body = 'Content-Length: 2\r\nConnection: close\r\n\r\nhi';
  if (path === 'listener') {
    const head = `POST http://${PLAIN}/items/1${query} HTTP/1.1\r\nHost: ${PLAIN}\r\n`;
    return exchange(g.gw.proxy.port, `${head}${fields}${body}`);
  }
  if (path === 'tunnel') {
    const t = await connectTunnel(g.gw.proxy.port, PLAIN);
    expect(t.status).toBe(200);
    const head = `POST /items/1${query} HTTP/1.1\r\nHost: ${PLAIN}\r\n`;
    const r = await roundTrip(t.socket, `${head}${fields}${body}`);
    t.socket.destroy();
    return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(r.got)?.[1] ?? 0) };
  }
  const hs = await handshakeThrough(g.gw.proxy.port, SECURE, { ca: ca.pem });
  if (!hs.ok) throw new Error(hs.error);
  return requestOn(
    hs.socket,
    `POST /items/1${query} HTTP/1.1\r\nHost: ${SECURE}\r\n${fields}${body}`,
  );
}

const seen = () => plain.seen.length + secure.seen.length;

/** Refused 400 with one record naming `named`; no upstream saw it. */
async function expectRefused(send: () => Promise<{ status: number }>, named: string) {
  const before = refusals().length;
  const reached = seen();
  const res = await send();
  expect(res.status).toBe(400);
  await waitFor(() => refusals().length > before);
  expect(refusals()).toHaveLength(before + 1);
  const reason = refusals().at(-1)?.reason ?? '';
  expect(reason).toMatch(/^method overrides are not allowed \(/);
  expect(reason).toContain(named);
  expect(reason).toMatch(/send the request with the method you mean/);
  expect(seen()).toBe(reached);
}

const FIELDS = [
  { fields: 'X-HTTP-Method-Override: DELETE\r\n', named: 'X-HTTP-Method-Override' },
  // An allowed method is no better: trajgate refuses the override, it does not judge it.
  { fields: 'x-http-method-override: GET\r\n', named: 'x-http-method-override' },
  { fields: 'X-HTTP-Method: PUT\r\n', named: 'X-HTTP-Method' },
  { fields: 'X-Method-Override: DELETE\r\n', named: 'X-Method-Override' },
  { fields: 'X-METHOD-OVERRIDE: delete\r\n', named: 'X-METHOD-OVERRIDE' },
  { fields: 'X_HTTP_METHOD_OVERRIDE: DELETE\r\n', named: 'X_HTTP_METHOD_OVERRIDE' },
  { fields: 'X-HTTP-Method-Override:\r\n', named: 'X-HTTP-Method-Override' },
  {
    fields: 'X-HTTP-Method-Override: POST\r\nX-HTTP-Method-Override: DELETE\r\n',
    named: 'X-HTTP-Method-Override',
  },
];

const QUERIES = [
  '?_method=DELETE',
  '?_METHOD=DELETE',
  '?_Method=delete',
  '?%5fmethod=DELETE',
  '?%5Fmethod=DELETE',
  '?_me%74hod=DELETE',
  '?%255Fmethod=DELETE',
  '?a=1&_method=PUT',
  '?a=1;_method=PUT',
  '?_method[]=DELETE',
  '?.method=DELETE',
  '?+_method=DELETE',
  '?_method',
];

describe('override fields are refused on every path', () => {
  for (const path of PATHS) {
    it.each(FIELDS)(`${path}: $named`, async ({ fields, named }) => {
      await expectRefused(() => post(path, '', fields), named);
    });
  }
});

describe('a _method query parameter, in any spelling, is refused on every path', () => {
  for (const path of PATHS) {
    it.each(QUERIES)(`${path}: %s`, async (query) => {
      const name = query.slice(1).split(/[&;]/).at(-1)?.split('=')[0] ?? '';
      await expectRefused(() => post(path, query, ''), JSON.stringify(name));
    });
  }
});

describe('curl, and an Upgrade', () => {
  it('curl -X POST -H "X-HTTP-Method-Override: DELETE" → 400 naming it; upstream untouched', async () => {
    const header = ['-H', 'X-HTTP-Method-Override: DELETE', '-d', 'x'];
    const send = async () => curl(['-x', g.proxyUrl, ...header, `http://${PLAIN}/items/1`]);
    await expectRefused(send, 'X-HTTP-Method-Override');
  });

  it('curl through intercepted TLS with ?_method=DELETE → 400; upstream untouched', async () => {
    const args = ['--cacert', ca.certPath, '-x', g.proxyUrl, '-d', 'x'];
    const send = () => curl([...args, `https://${SECURE}/items/1?_method=DELETE`]);
    await expectRefused(send, '"_method"');
  });

  it.each([
    { extra: 'X-HTTP-Method-Override: DELETE\r\n', query: '', named: 'X-HTTP-Method-Override' },
    { extra: '', query: '?%5Fmethod=DELETE', named: '"%5Fmethod"' },
  ])('an Upgrade carrying $named → 400; nothing upgraded', async ({ extra, query, named }) => {
    const before = upgrades.upgrades.length;
    const connections = upgrades.connections;
    const head =
      `GET http://${UPGRADE}/ws${query} HTTP/1.1\r\nHost: ${UPGRADE}\r\n` +
      `Connection: Upgrade\r\nUpgrade: websocket\r\n${extra}\r\n`;
    await expectRefused(() => exchange(g.gw.proxy.port, head), named);
    expect(upgrades.upgrades).toHaveLength(before);
    expect(upgrades.connections).toBe(connections);
  });
});

describe('what is not an override still goes', () => {
  for (const path of PATHS) {
    it.each(['', '?method=DELETE', '?_methods=1', '?my_method=1', '?q=_method'])(
      `${path}: an ordinary POST%s → 200, sent as POST`,
      async (query) => {
        const reached = seen();
        const res = await post(path, query, 'X-Request-Id: 7\r\n');
        expect(res.status).toBe(200);
        expect(seen()).toBe(reached + 1);
        const got = (path === 'tls' ? secure : plain).seen.at(-1);
        expect(got).toMatchObject({ method: 'POST', url: `/items/1${query}`, body: 'hi' });
      },
    );
  }

  it('curl -d x → 200, a POST upstream', async () => {
    const res = await curl(['-x', g.proxyUrl, '-d', 'x', `http://${PLAIN}/items/2`]);
    expect(res.status).toBe(200);
    expect(plain.seen.at(-1)).toMatchObject({ method: 'POST', url: '/items/2', body: 'x' });
  });
});
