import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminClient } from '../helpers/admin.js';
import { adminClient, agentAuth, lineCount, viaProxy } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import { isOutcome, waitForRecords } from '../helpers/wait.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Bad input to the admin API: each call gets a clear error with a stable code, and changes
 * nothing — the journal has the same lines, every session the same state and held requests.
 * agent-1 is paused with one request held; agent-2 is active.
 */
const other = await startUpstream();
const ADMIN = 'operator-admin-token-0123456789';
const AGENTS = [
  { id: 'agent-1', token: 'agent-1-token-0123456789abcdef' },
  { id: 'agent-2', token: 'agent-2-token-0123456789abcdef' },
];

let g: TestGateway;
let api: AdminClient;
let held: Promise<unknown>;

beforeAll(async () => {
  g = await startTestGateway({
    agents: AGENTS,
    policy: { holdTimeout: '60s' },
    network: { allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
  });
  api = adminClient(g.gw.admin.port, ADMIN);
  const a1 = agentAuth('agent-1', AGENTS[0]!.token);
  expect((await viaProxy(g.proxyUrl, `${other.url}/a`, a1)).status).toBe(403);
  held = viaProxy(g.proxyUrl, `${other.url}/b`, a1);
  await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);
  await viaProxy(g.proxyUrl, `${other.url}/c`, agentAuth('agent-2', AGENTS[1]!.token));
  // The outcomes of /a and /c, written after their answers: then the journal is still.
  await waitForRecords(g, isOutcome, 2);
});

afterAll(async () => {
  await g.stop();
  await held;
});

/** What must not change: journal lines, and every session's view. */
async function snapshot() {
  const sessions = (await api.get('/api/sessions')).json.sessions;
  const approvals = (await api.get('/api/approvals')).json.approvals;
  return { lines: lineCount(g.journalPath), sessions, approvals };
}

const longBody = JSON.stringify({ pattern: 'x.example', pad: 'x'.repeat(70 * 1024) });

interface Row {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  status: number;
  code: string;
  says?: string | RegExp;
}

const rows: Row[] = [
  // unknown session
  ...['', '/events'].map((tail) => ({
    name: `GET unknown session${tail}`,
    method: 'GET',
    path: `/api/sessions/nobody${tail}`,
    status: 404,
    code: 'E_UNKNOWN_SESSION',
    says: 'no session "nobody"',
  })),
  ...['approve', 'resume', 'deny'].map((op) => ({
    name: `POST ${op} on an unknown session`,
    method: 'POST',
    path: `/api/sessions/nobody/${op}`,
    body: { pattern: 'x.example' },
    status: 404,
    code: 'E_UNKNOWN_SESSION',
  })),
  // malformed JSON
  ...[
    ['approve', '{"pattern": '],
    ['approve', '[1, 2]'],
    ['approve', '"pkg.example"'],
    ['resume', '{bad'],
    ['deny', 'null'],
  ].map(([op, body]) => ({
    name: `POST ${op} with body ${body}`,
    method: 'POST',
    path: `/api/sessions/agent-1/${op}`,
    body: body as string,
    status: 400,
    code: 'E_BAD_JSON',
    says: /JSON/,
  })),
  // missing, empty or wrong fields
  ...[{}, { pattern: '' }, { pattern: '   ' }, { pattern: 42 }, { pattern: null }].map((body) => ({
    name: `approve ${JSON.stringify(body)}`,
    method: 'POST',
    path: '/api/sessions/agent-1/approve',
    body,
    status: 400,
    code: 'E_BAD_FIELD',
    says: 'field "pattern" must be a non-empty string',
  })),
  {
    name: 'global approval without a pattern',
    method: 'POST',
    path: '/api/approvals',
    body: { ttl: '1h' },
    status: 400,
    code: 'E_BAD_FIELD',
    says: 'field "pattern"',
  },
  // bad patterns say why
  ...[
    ['FETCH pkg.example', 'unknown method "FETCH"'],
    ['pk*g.example', '"*" is only allowed as a leading "*." in the host'],
    ['pkg.example:70000', 'port 70000 is out of range'],
    ['*.127.0.0.1', '"*." cannot prefix an IP address'],
    ['gopher2://pkg.example', 'scheme "gopher2" has no default port'],
    ['http://', 'expected [METHOD ][scheme://]host[:port][/path-prefix]'],
  ].map(([pattern, why]) => ({
    name: `bad pattern ${pattern}`,
    method: 'POST',
    path: '/api/sessions/agent-1/approve',
    body: { pattern },
    status: 400,
    code: 'E_PATTERN_INVALID',
    says: why as string,
  })),
  // bad ttl, kind, reset
  ...['soon', '0s', '-1h', 3600, '', true].map((ttl) => ({
    name: `ttl ${JSON.stringify(ttl)}`,
    method: 'POST',
    path: '/api/sessions/agent-1/approve',
    body: { pattern: 'pkg.example', ttl },
    status: 400,
    code: 'E_BAD_FIELD',
    says: 'field "ttl" must be a duration like 30m or 1h',
  })),
  {
    name: 'unknown kind',
    method: 'POST',
    path: '/api/sessions/agent-1/approve',
    body: { pattern: 'pkg.example', kind: 'teleport' },
    status: 400,
    code: 'E_BAD_FIELD',
    says: 'field "kind" must be one of',
  },
  {
    name: 'reset that is not a boolean',
    method: 'POST',
    path: '/api/sessions/agent-1/resume',
    body: { reset: 'yes' },
    status: 400,
    code: 'E_BAD_FIELD',
    says: 'field "reset" must be true or false',
  },
  ...['limit=0', 'limit=abc', 'limit=10001', 'before=-1', 'before=1.5'].map((q) => ({
    name: `events?${q}`,
    method: 'GET',
    path: `/api/sessions/agent-1/events?${q}`,
    status: 400,
    code: 'E_BAD_FIELD',
    says: `query "${q.split('=')[0]}" must be a whole number`,
  })),
  {
    name: 'session id that is not percent-encoding',
    method: 'GET',
    path: '/api/sessions/%E0%A4%A',
    status: 400,
    code: 'E_BAD_FIELD',
  },
  // not paused
  ...['resume', 'deny'].map((op) => ({
    name: `${op} of an active session`,
    method: 'POST',
    path: `/api/sessions/agent-2/${op}`,
    status: 409,
    code: 'E_NOT_PAUSED',
    says: `cannot ${op} session "agent-2": it is not paused`,
  })),
  // too large (declared Content-Length; the chunked case is below)
  {
    name: 'oversized approve body',
    method: 'POST',
    path: '/api/sessions/agent-1/approve',
    body: longBody,
    status: 413,
    code: 'E_TOO_LARGE',
    says: 'body is larger than 65536 bytes',
  },
  // routes and methods
  ...['/api/nothing', '/api/sessions/agent-1/pause', '/api/sessions/agent-1/events/1', '/api'].map(
    (path) => ({ name: `GET ${path}`, method: 'GET', path, status: 404, code: 'E_NOT_FOUND' }),
  ),
  ...[
    ['DELETE', '/api/sessions'],
    ['POST', '/api/sessions'],
    ['GET', '/api/sessions/agent-1/resume'],
    ['PUT', '/api/sessions/agent-1/approve'],
    ['DELETE', '/api/sessions/agent-1'],
  ].map(([method, path]) => ({
    name: `${method} ${path}`,
    method: method as string,
    path: path as string,
    status: 405,
    code: 'E_METHOD',
    says: `${method} is not allowed on ${path}`,
  })),
];

describe('bad input to the admin API changes nothing', () => {
  it.each(rows)('$name → $status $code', async (row) => {
    const before = await snapshot();
    const res = await api.call(
      row.method,
      row.path,
      row.body === undefined ? {} : { body: row.body },
    );
    expect(res.status).toBe(row.status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json.error.code).toBe(row.code);
    expect(typeof res.json.error.message).toBe('string');
    if (row.says) expect(res.json.error.message).toMatch(row.says);
    expect(await snapshot()).toEqual(before);
  });

  it('413 before reading a body whose Content-Length is too large (raw socket)', async () => {
    const before = await snapshot();
    const res = await exchange(
      api.port,
      `POST /api/sessions/agent-1/approve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 10000000\r\nConnection: close\r\n\r\n{"pattern":',
      { timeoutMs: 25_000 },
    );
    expect(res.status).toBe(413);
    // The body never ends: only an answer before reading it comes before requestTimeout (30 s).
    expect(res.ms).toBeLessThan(15_000);
    expect(JSON.parse(res.body).error.code).toBe('E_TOO_LARGE');
    expect(await snapshot()).toEqual(before);
  });

  it('413 for a chunked body past the limit (no Content-Length)', async () => {
    const before = await snapshot();
    const chunk = 'x'.repeat(8 * 1024);
    const chunks = [
      `POST /api/approvals HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\n` +
        'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
      `b\r\n{"pattern":\r\n`,
      ...Array.from({ length: 10 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`),
      '0\r\n\r\n',
    ];
    const res = await exchange(api.port, chunks, { timeoutMs: 25_000 });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error.code).toBe('E_TOO_LARGE');
    expect(await snapshot()).toEqual(before);
  });

  it('after all of it, the held request is still held and resumes', async () => {
    const detail = await api.get('/api/sessions/agent-1');
    expect(detail.json).toMatchObject({ state: 'paused', held: 1, counts: { network: 2 } });
    expect(g.records().filter((r) => r.type === 'approve')).toEqual([]);
    const deny = await api.post('/api/sessions/agent-1/deny');
    expect(deny.json).toEqual({ denied: true, released: 1 });
  });
});
