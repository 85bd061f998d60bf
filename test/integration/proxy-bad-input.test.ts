import { afterEach, describe, expect, it } from 'vitest';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { adminClient, generatedToken } from '../helpers/admin.js';
import { connectTunnel, exchange, roundTrip } from '../helpers/raw.js';
import type { RawResponse } from '../helpers/raw.js';
import { absoluteGet, LOOPBACK_SPELLINGS, originGet } from '../helpers/request-corpus.js';
import { startUpstream } from '../helpers/upstream.js';
import type { EventRecord } from '../../src/journal/records.js';

/**
 * Egress refusals the gateway makes on its own, before any connection is opened: private
 * addresses in every spelling, its own port, and CONNECT to ports outside `network.ports`.
 * Every target is on loopback; the refused ones must never see a connection.
 */
const refused = await startUpstream();
const control = await startUpstream();

let gateways: TestGateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  gateways = [];
});

async function start(
  config: Record<string, unknown>,
  lookup?: (host: string) => Promise<readonly string[]>,
): Promise<TestGateway> {
  const g = await startTestGateway(config, lookup ? { lookup } : {});
  gateways.push(g);
  return g;
}

const toLoopback = async () => ['127.0.0.1'];

/** How a row reaches the proxy: curl, a raw absolute-form request, or a raw CONNECT. */
type Via = 'curl' | 'raw' | 'connect';

async function send(g: TestGateway, via: Via, target: string): Promise<RawResponse> {
  if (via === 'connect') {
    const t = await connectTunnel(g.gw.proxy.port, target);
    const rest = await roundTrip(t.socket, '', () => false, 1_000);
    t.socket.destroy();
    return {
      text: '',
      status: t.status,
      headers: t.headers,
      body: t.rest + rest.got,
      closed: rest.closed,
      ms: 0,
    };
  }
  if (via === 'curl') {
    const r = await curl(['-x', g.proxyUrl, target]);
    return { text: '', status: r.status, headers: r.headers, body: r.body, closed: true, ms: 0 };
  }
  return exchange(g.gw.proxy.port, absoluteGet(target));
}

function events(g: TestGateway): EventRecord[] {
  return g.records().filter((r): r is EventRecord => r.type === 'event');
}

describe('private and odd loopback spellings are refused before any connection', () => {
  const P = () => refused.port;
  const rows: { name: string; via: Via; target: () => string; allow?: () => string[] }[] = [
    { name: '127.0.0.1 (curl)', via: 'curl', target: () => `http://127.0.0.1:${P()}/` },
    ...LOOPBACK_SPELLINGS.map(({ name, host, allowAs }) => ({
      name,
      via: 'raw' as const,
      target: () => `http://${host}:${P()}/`,
      ...(allowAs === undefined ? {} : { allow: () => [`${allowAs}:${P()}`] }),
    })),
    {
      name: 'localhost (curl)',
      via: 'curl',
      target: () => `http://localhost:${P()}/`,
      allow: () => [`localhost:${P()}`],
    },
    { name: 'CONNECT 127.0.0.1:PORT', via: 'connect', target: () => `127.0.0.1:${P()}` },
  ];

  it.each(rows)('$name → 403 REVIEW, denied "private address", upstream untouched', async (row) => {
    const allow = row.allow?.() ?? [`127.0.0.1:${P()}`];
    const g = await start({ network: { allow, allowPrivate: [] } }, toLoopback);
    const target = row.target();
    const res = await send(g, row.via, target);
    expect(res.status).toBe(403);
    expect(res.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    const recorded = events(g);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ target, verdict: 'REVIEW', boundary: 'network' });
    expect(recorded[0]?.denied).toContain('private address');
    expect(refused.connections).toBe(0);
    expect(refused.seen).toHaveLength(0);
  });

  it('a second denied attempt in the same session pauses it (REVIEW → PAUSE)', async () => {
    const g = await start(
      { policy: { pause: 'block' }, network: { allow: [`127.0.0.1:${P()}`] } },
      toLoopback,
    );
    const first = await send(g, 'raw', `http://127.1:${P()}/a`);
    const second = await send(g, 'raw', `http://0x7f000001:${P()}/b`);
    expect(first.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(second.status).toBe(403);
    expect(second.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=network');
    expect(events(g).map((e) => e.verdict)).toEqual(['REVIEW', 'PAUSE']);
    expect(refused.connections).toBe(0);
  });

  it.each([
    { name: '127.0.0.1 (curl)', via: 'curl' as Via, host: '127.0.0.1' },
    { name: '0x7f.0.0.1 (raw)', via: 'raw' as Via, host: '0x7f.0.0.1' },
  ])('control: with allowPrivate 127.0.0.1/32, $name is forwarded 200', async (row) => {
    const g = await start({
      network: { allow: [`127.0.0.1:${control.port}`], allowPrivate: ['127.0.0.1/32'] },
    });
    const before = control.seen.length;
    const res = await send(g, row.via, `http://${row.host}:${control.port}/control`);
    expect(res.status).toBe(200);
    expect(control.seen.slice(before).map((r) => r.url)).toEqual(['/control']);
    expect(events(g)[0]).toMatchObject({ verdict: 'ALLOW' });
    expect(events(g)[0]?.denied).toBeUndefined();
  });
});

describe("trajgate's own port is never reachable through it", () => {
  /** A gateway (port 0) whose own proxy port is then approved, as an allow pattern would. */
  async function startOnKnownPort(): Promise<{ g: TestGateway; port: number }> {
    const g = await start({ network: { allowPrivate: ['127.0.0.1/32'] } });
    const port = g.gw.proxy.port;
    const api = adminClient(g.gw.admin.port, generatedToken(g.gw.adminTokenFile));
    expect((await api.post('/api/approvals', { pattern: `127.0.0.1:${port}` })).status).toBe(201);
    return { g, port };
  }

  it.each([
    { via: 'curl' as Via, target: (p: number) => `http://127.0.0.1:${p}/` },
    { via: 'connect' as Via, target: (p: number) => `127.0.0.1:${p}` },
  ])('$via to 127.0.0.1:<proxy port> → 403, journal says "trajgate\'s own port"', async (row) => {
    const { g, port } = await startOnKnownPort();
    expect(g.gw.proxy.port).toBe(port);
    const res = await send(g, row.via, row.target(port));
    expect(res.status).toBe(403);
    // One event only: the proxy did not connect to itself and judge the request again.
    const recorded = events(g);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]?.denied).toContain("trajgate's own port");
    expect(recorded[0]?.verdict).toBe('REVIEW');
  });
});

describe('CONNECT outside network.ports', () => {
  const P = () => control.port;
  const rows = [
    {
      name: 'allow localhost, CONNECT localhost:PORT → 403',
      ok: false,
      host: 'localhost',
      named: false,
    },
    {
      name: 'allow 127.0.0.1, CONNECT 127.0.0.1:PORT → 403',
      ok: false,
      host: '127.0.0.1',
      named: false,
    },
    { name: 'allow 127.0.0.1:PORT → tunnel', ok: true, host: '127.0.0.1', named: true },
    { name: 'allow localhost:PORT → tunnel', ok: true, host: 'localhost', named: true },
  ];

  it.each(rows)('$name', async (row) => {
    const lookups: string[] = [];
    const g = await start(
      {
        network: {
          allow: [row.named ? `${row.host}:${P()}` : row.host],
          allowPrivate: ['127.0.0.1/32'],
        },
      },
      async (host) => {
        lookups.push(host);
        return ['127.0.0.1'];
      },
    );
    const before = control.connections;
    const t = await connectTunnel(g.gw.proxy.port, `${row.host}:${P()}`);
    try {
      if (!row.ok) {
        expect(t.status).toBe(403);
        expect(events(g)[0]?.denied).toBe(`port ${P()} not allowed`);
        expect(control.connections).toBe(before);
        expect(lookups).toEqual([]); // refused before the name was even resolved
        return;
      }
      expect(t.status).toBe(200);
      const get = originGet(P(), '/tunnelled');
      const { got } = await roundTrip(t.socket, get, (s) => s.includes('"url":"/tunnelled"'));
      expect(got).toMatch(/^HTTP\/1\.1 200 /);
      expect(control.connections).toBe(before + 1);
    } finally {
      t.socket.destroy();
    }
  });
});
