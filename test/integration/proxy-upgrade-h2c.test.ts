import { describe, expect, it } from 'vitest';
import { gatewayPerTest } from '../helpers/gateway.js';
import { connect } from 'node:net';
import { exchange, openRaw, parseHead, roundTrip, startTcpServer } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';
import type { RefusalRecord } from '../../src/journal/records.js';

/**
 * `network.upgrades` (default: websocket only). The upstream is an h2c-capable raw server: it
 * answers `101` to any Upgrade it is sent (h2c with an HTTP/2 SETTINGS frame after it) and
 * records every head it received, so a test sees what trajgate forwarded.
 */
const heads: string[] = [];
const upstream = await startTcpServer((socket) => {
  let got = '';
  socket.on('data', (d: Buffer) => {
    got += d.toString('latin1');
    const end = got.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = got.slice(0, end + 4);
    got = got.slice(end + 4);
    heads.push(head);
    const asked = /\r\nupgrade: *([^\r]*)/i.exec(head)?.[1];
    if (asked === undefined) {
      socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
      return;
    }
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${asked}\r\n\r\n`,
    );
    // An empty HTTP/2 SETTINGS frame (RFC 9113 § 6.5): what an h2c server sends first.
    socket.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]));
  });
});
const P = upstream.port;
const SETTINGS = 'HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n';

const { start, keep } = gatewayPerTest({
  network: { allow: [`127.0.0.1:${P}`], allowPrivate: ['127.0.0.1/32'] },
});

const request = (fields: string) =>
  `GET http://127.0.0.1:${P}/ HTTP/1.1\r\nHost: 127.0.0.1:${P}\r\n${fields}\r\n`;

describe('network.upgrades: only the listed protocols are asked of an upstream', () => {
  it.each([
    ['h2c', 'Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n' + SETTINGS, 403],
    ['H2C, any case', 'Upgrade: H2C\r\nConnection: upgrade\r\n', 403],
    ['h2c with a version', 'Upgrade: h2c/1\r\nConnection: Upgrade\r\n', 403],
    ['h2c after websocket', 'Upgrade: websocket, h2c\r\nConnection: Upgrade\r\n', 403],
    ['h2c before websocket', 'Upgrade: h2c, websocket\r\nConnection: Upgrade\r\n', 403],
    ['h2c on a second line', 'Upgrade: websocket\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n', 403],
    ['HTTP/2.0', 'Upgrade: HTTP/2.0\r\nConnection: Upgrade\r\n', 403],
    ['TLS/1.2 (RFC 2817)', 'Upgrade: TLS/1.2\r\nConnection: Upgrade\r\n', 403],
    ['a space inside', 'Upgrade: web socket\r\nConnection: Upgrade\r\n', 400],
    ['a parameter', 'Upgrade: websocket;v=13\r\nConnection: Upgrade\r\n', 400],
    ['two slashes', 'Upgrade: websocket/13/1\r\nConnection: Upgrade\r\n', 400],
    ['no name', 'Upgrade: /13\r\nConnection: Upgrade\r\n', 400],
    ['only empty elements', 'Upgrade: , ,\r\nConnection: Upgrade\r\n', 400],
  ])(
    '%s → refused before anything goes upstream, one refusal record',
    async (_, fields, status) => {
      const g = await start();
      const before = upstream.connections;
      const res = await exchange(g.gw.proxy.port, request(fields));
      expect(res.status).toBe(status);
      expect(res.closed).toBe(true);
      expect(res.body).toMatch(status === 403 ? /network\.upgrades allows websocket/ : /Upgrade/);
      expect(res.body.trim().split('\n')).toHaveLength(1);
      await waitFor(() => g.records().length > 0);
      const records = g.records();
      // A refusal before judging: no event, so it is no egress crossing.
      expect(records.map((r) => r.type)).toEqual(['refusal']);
      expect(records[0] as RefusalRecord).toMatchObject({ status, session: '127.0.0.1' });
      expect(upstream.connections).toBe(before);
    },
  );

  it('websocket still switches, and HTTP2-Settings is never forwarded with it', async () => {
    const g = await start();
    const t = keep(
      await openRaw(
        g.gw.proxy.port,
        request('Upgrade: WebSocket\r\nConnection: Upgrade\r\n' + SETTINGS),
      ),
    );
    expect(t.status).toBe(101);
    const head = heads.at(-1) as string;
    expect(head).toMatch(/\r\nupgrade: WebSocket\r\n/i);
    expect(head).not.toMatch(/http2-settings/i);
  });

  it('widened to h2c, h2c switches (the list is what decides)', async () => {
    const g = await start({
      network: { allow: [`127.0.0.1:${P}`], allowPrivate: ['127.0.0.1/32'], upgrades: ['H2C'] },
    });
    const t = keep(
      await openRaw(g.gw.proxy.port, request('Upgrade: h2c\r\nConnection: Upgrade\r\n')),
    );
    expect(t.status).toBe(101);
    expect(heads.at(-1)).toMatch(/\r\nupgrade: h2c\r\n/i);
    const ws = await exchange(
      g.gw.proxy.port,
      request('Upgrade: websocket\r\nConnection: Upgrade\r\n'),
    );
    expect(ws.status).toBe(403);
  });

  it.each([
    ['Connection without upgrade', 'Upgrade: h2c\r\nConnection: HTTP2-Settings\r\n' + SETTINGS],
    ['no Connection at all', 'Upgrade: h2c\r\n' + SETTINGS],
  ])(
    'a plain request carrying Upgrade (%s): sent on without Upgrade or HTTP2-Settings, never 101',
    async (_, fields) => {
      const g = await start();
      const socket = connect(g.gw.proxy.port, '127.0.0.1');
      socket.on('error', () => {});
      const done = (text: string) => text.endsWith('\r\n\r\nok');
      const { got } = await roundTrip(socket, request(fields), done);
      socket.destroy();
      expect(parseHead(got)).toMatchObject({ status: 200, body: 'ok' });
      const head = heads.at(-1) as string;
      expect(head).toMatch(/^GET \/ HTTP\/1\.1\r\n/);
      expect(head).not.toMatch(/\r\n(upgrade|http2-settings):/i);
    },
  );
});
