import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import { AGENT_TOKEN, bridgeGateway, FILE_ROUTES } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';
import { outcomeOf, waitForRecords } from '../helpers/wait.js';

/**
 * The plain-HTTP adapter (bridge.protocol: http) in front of a small tool server written here:
 * routes turn requests into events (target from a JSON body field, a query parameter or a
 * path segment); inside targets are forwarded as the absolute paths judged, outside ones are
 * 403 PAUSE and the tool server sees nothing.
 */
const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];
const tools = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    res.writeHead(200, { 'content-type': 'application/json', 'x-tool': 'yes' });
    res.end(JSON.stringify({ done: `${req.method} ${req.url}` }));
  });
});
await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
const toolPort = (tools.address() as AddressInfo).port;

// Registered first, so it runs after the gateway has stopped (after-hooks run last first).
afterAll(async () => {
  tools.closeAllConnections();
  await new Promise<void>((r) => tools.close(() => r()));
});

const ws = tempDir();
const TOKEN = AGENT_TOKEN;
const g = await bridgeGateway(ws, `http://127.0.0.1:${toolPort}`, {
  protocol: 'http',
  routes: [
    ...FILE_ROUTES,
    { method: 'POST', path: '/exec', kind: 'command', target: '$.cwd' },
    { method: 'PUT', path: '/fs/touch', kind: 'write', target: 'query:path' },
    { method: 'DELETE', path: '/trash/*', kind: 'write', target: 'segment:2' },
    { method: 'POST', path: '/deploy/*', kind: 'deploy', target: 'segment:2' },
  ],
});

async function send(method: string, path: string, body?: unknown) {
  const text =
    body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const res = await request(`http://127.0.0.1:${g.gw.bridge.port}${path}`, {
    method: method as 'GET',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(text === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(text === undefined ? {} : { body: text }),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text(), sent: text };
}

const lastEvent = () =>
  g
    .records()
    .filter((r): r is EventRecord => r.type === 'event')
    .at(-1);

const enc = encodeURIComponent;

describe('HTTP adapter: routes map requests to events', () => {
  const inside = [
    {
      method: 'POST',
      path: '/fs/write',
      body: { path: join(ws, 'a.txt'), content: 'x' },
      kind: 'write',
      target: join(ws, 'a.txt'),
    },
    {
      method: 'POST',
      path: '/exec',
      body: { cwd: ws, argv: ['make', 'test'] },
      kind: 'command',
      target: ws,
    },
    {
      method: 'GET',
      path: `/fs/read?path=${enc(join(ws, 'a.txt'))}`,
      kind: 'read',
      target: join(ws, 'a.txt'),
    },
    { method: 'GET', path: '/fs/read?path=%2Fetc%2Fhosts', kind: 'read', target: '/etc/hosts' },
    // A relative query target goes as the absolute path judged; the other pairs as sent.
    {
      method: 'DELETE',
      path: '/files?path=a.txt',
      kind: 'write',
      target: 'a.txt',
      url: `/files?path=${enc(join(ws, 'a.txt'))}`,
    },
    {
      method: 'DELETE',
      path: '/files?v=1&path=b+c.txt&x=%2F',
      kind: 'write',
      target: 'b c.txt',
      url: `/files?v=1&path=${enc(join(ws, 'b c.txt'))}&x=%2F`,
    },
    {
      method: 'GET',
      path: '/fs/read?p%61th=.%2Fd.txt',
      kind: 'read',
      target: './d.txt',
      url: `/fs/read?path=${enc(join(ws, 'd.txt'))}`,
    },
    // A segment of another kind is an opaque string: judged and forwarded as sent.
    { method: 'POST', path: '/deploy/staging', body: {}, kind: 'deploy', target: 'staging' },
  ];
  it.each(inside)('$method $path → forwarded as judged (ALLOW)', async (c) => {
    const before = seen.length;
    const res = await send(c.method, c.path, c.body);
    expect(res.status).toBe(200);
    expect(res.headers['x-tool']).toBe('yes');
    const url = c.url ?? c.path;
    expect(JSON.parse(res.body)).toEqual({ done: `${c.method} ${url}` });
    expect(seen.length).toBe(before + 1);
    const got = seen.at(-1);
    expect(got).toMatchObject({ method: c.method, url, body: res.sent ?? '' });
    expect(got?.headers.authorization).toBeUndefined();
    expect(lastEvent()).toMatchObject({
      session: 'agent-1',
      source: 'bridge',
      kind: c.kind,
      target: c.target,
      verdict: 'ALLOW',
    });
  });

  const outside = [
    { method: 'POST', path: '/fs/write', body: { path: '/etc/cron.d/x', content: '* * * * * sh' } },
    { method: 'POST', path: '/fs/write', body: { path: `${ws}/../escaped.txt` } },
    { method: 'POST', path: '/exec', body: { cwd: '/', argv: ['rm', '-rf', 'x'] } },
  ];
  it.each(outside)('$method $path $body → 403 PAUSE, tool server sees nothing', async (c) => {
    const before = seen.length;
    const res = await send(c.method, c.path, c.body);
    expect(res.status).toBe(403);
    expect(res.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=workspace');
    expect(res.body).toMatch(/^trajgate paused this session: /);
    expect(res.body).toContain('outside the workspace');
    expect(seen.length).toBe(before);
    expect(lastEvent()).toMatchObject({ verdict: 'PAUSE', boundary: 'workspace' });
    // resume() throws unless the session is paused
    expect(g.gw.sessions.resume('agent-1', { reset: true })).toBe(0);
  });

  const missing = [
    { method: 'POST', path: '/fs/write', body: { content: 'x' }, says: '$.path' },
    { method: 'POST', path: '/fs/write', body: { path: 5 }, says: '$.path' },
    { method: 'POST', path: '/fs/write', body: '{not json', says: 'body is not valid JSON' },
    { method: 'POST', path: '/exec', body: { argv: ['ls'] }, says: '$.cwd' },
    { method: 'GET', path: '/fs/read', says: 'query:path' },
    { method: 'GET', path: '/fs/read?path=', says: 'query:path' },
  ];
  it.each(missing)('$method $path $body: no target → 400, journaled, not forwarded', async (c) => {
    const before = seen.length;
    const res = await send(c.method, c.path, c.body);
    expect(res.status).toBe(400);
    expect(res.body).toContain(c.says.startsWith('body') ? c.says : `no string at ${c.says}`);
    expect(seen.length).toBe(before);
    expect(g.records().at(-1)).toMatchObject({
      type: 'refusal',
      source: 'bridge',
      session: 'agent-1',
      status: 400,
    });
    expect(g.gw.sessions.isPaused('agent-1')).toBe(false);
  });

  it('an unmapped path is a tool event: 403 REVIEW, then PAUSE on the second', async () => {
    const before = seen.length;
    const first = await send('POST', '/admin/reset', { all: true });
    expect(first.status).toBe(403);
    expect(first.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=tool');
    expect(first.body).toContain('trajgate refused this request: POST /admin/reset');
    expect(lastEvent()).toMatchObject({
      kind: 'tool',
      target: 'POST /admin/reset',
      verdict: 'REVIEW',
    });
    const second = await send('GET', '/fs/write');
    expect(second.status).toBe(403);
    expect(second.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=tool');
    expect(seen.length).toBe(before);
    g.gw.sessions.resume('agent-1', { reset: true });
  });

  it('missing bearer → 401 JSON, not forwarded; a good call works afterwards', async () => {
    const before = seen.length;
    const res = await request(`http://127.0.0.1:${g.gw.bridge.port}/fs/read?path=a`, {
      headersTimeout: 30_000,
    });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(((await res.body.json()) as { error: { message: string } }).error.message).toMatch(
      /agent token required/,
    );
    expect(seen.length).toBe(before);
    const ok = await send('GET', '/fs/read?path=a.txt');
    expect(ok.status).toBe(200);
    const rid = lastEvent()?.seq;
    const records = await waitForRecords(g, outcomeOf(rid));
    expect(records.find(outcomeOf(rid))).toMatchObject({ status: 200 });
  });

  it('PUT /fs/touch?path=a.txt (write at query:path) → forwarded with the absolute path', async () => {
    const res = await send('PUT', '/fs/touch?path=a.txt');
    expect(res.status).toBe(200);
    expect(seen.at(-1)?.url).toBe(`/fs/touch?path=${enc(join(ws, 'a.txt'))}`);
    expect(lastEvent()).toMatchObject({ kind: 'write', target: 'a.txt', verdict: 'ALLOW' });
  });

  // Refused before anything is judged: 400 with one line, one refusal record, nothing sent.
  const unforwardable = [
    {
      name: 'a relative segment target of a path kind',
      method: 'DELETE',
      path: '/trash/a.txt',
      says: `DELETE /trash/a.txt: segment 2 "a.txt" is the path ${join(ws, 'a.txt')}, and a path segment cannot carry the absolute path; give it in the query or body`,
    },
    {
      name: 'a query target beside a body field of its name',
      method: 'PUT',
      path: '/fs/touch?path=a.txt',
      body: { path: '/etc/cron.d/x' },
      says: 'body field "path" may be read as the query parameter "path"',
    },
    {
      name: 'a body target beside a query parameter of its name',
      method: 'POST',
      path: `/fs/write?Path=${enc('/etc/cron.d/x')}`,
      body: { path: join(ws, 'a.txt') },
      says: 'query parameter "Path" may be read as the body field "path"',
    },
  ];
  it.each(unforwardable)('$name → 400, one record, nothing forwarded', async (c) => {
    const before = seen.length;
    const records = g.records().length;
    const res = await send(c.method, c.path, c.body);
    expect(res.status).toBe(400);
    expect(res.body).toMatch(/^trajgate: [^\n]+\n$/);
    expect(res.body).toContain(c.says);
    expect(g.records().slice(records)).toEqual([
      expect.objectContaining({
        type: 'refusal',
        source: 'bridge',
        session: 'agent-1',
        status: 400,
      }),
    ]);
    expect(seen.length).toBe(before);
  });

  // The path judged must be the path the server routes: targets not in normal form are refused.
  it.each(['/exec/../fs/read?path=a.txt', '//x/fs/read?path=a.txt'])(
    'raw target %s: the tool server sees only the path judged',
    async (target) => {
      const before = seen.length;
      const head = `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: close\r\n\r\n`;
      const res = await exchange(g.gw.bridge.port, head);
      expect(res.status).not.toBe(0);
      const judged = `/fs/read?path=${enc(join(ws, 'a.txt'))}`;
      expect([[], [judged]]).toContainEqual(seen.slice(before).map((s) => s.url));
    },
  );

  // A repeated target parameter is ambiguous (servers differ on which value wins): refused.
  it('a repeated target query parameter is refused, not judged by its first value', async () => {
    const before = seen.length;
    const res = await send('PUT', `/fs/touch?path=a.txt&path=${enc('/etc/cron.d/x')}`);
    expect(res.status).toBe(400);
    expect(seen.length).toBe(before);
  });
});
