import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { AGENT_TOKEN, bridgeGateway, FILE_ROUTES } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { outcomeOf, waitForRecords } from '../helpers/wait.js';

/**
 * HTTP adapter routes matched as tool servers route: each spelling of a request path is
 * either matched one way (event, and the normalised path forwarded) or refused 400 because
 * another server reading reaches another route or target. Unmapped calls are allowed here,
 * so a spelling that slipped past its route as "unmapped" would reach the tool server.
 */
const tools = await startUpstream();
const ws = tempDir();
const TOKEN = AGENT_TOKEN;
const g = await bridgeGateway(ws, tools.url, {
  protocol: 'http',
  unmapped: 'allow',
  routes: [
    ...FILE_ROUTES,
    { method: 'POST', path: '/Admin/Reset/', kind: 'command', target: '$.cwd' },
    { method: 'POST', path: '/run', kind: 'command', target: '$.options.cwd' },
    { method: 'GET', path: '/docs/**', kind: 'topic', target: 'segment:2' },
    { method: 'DELETE', path: '/jobs/*', kind: 'job', target: 'segment:2' },
    { method: 'DELETE', path: '/trash/*', kind: 'write', target: 'segment:2' },
  ],
});

const body = JSON.stringify({ path: join(ws, 'a.txt'), cwd: ws, options: { cwd: ws } });
const enc = encodeURIComponent;
/** Exactly these bytes on the wire: clients would clean up some of the spellings below. */
function send(method: string, target: string) {
  const withBody = method === 'POST';
  const head = [
    `${method} ${target} HTTP/1.1`,
    'Host: tools',
    `Authorization: Bearer ${TOKEN}`,
    ...(withBody ? ['Content-Type: application/json', `Content-Length: ${body.length}`] : []),
    'Connection: close',
  ];
  return exchange(g.gw.bridge.port, `${head.join('\r\n')}\r\n\r\n${withBody ? body : ''}`);
}

const journal = () => g.records();
const isEvent = (r: JournalRecord): r is EventRecord => r.type === 'event';

// [method, request target, event kind, event target, what the tool server received]
const matched: [string, string, string, string, string][] = [
  ['POST', '/fs/write', 'write', join(ws, 'a.txt'), '/fs/write'],
  ['POST', '/FS/Write', 'write', join(ws, 'a.txt'), '/FS/Write'],
  ['POST', '/fs/write/', 'write', join(ws, 'a.txt'), '/fs/write/'],
  ['POST', '/fs/%77rit%65', 'write', join(ws, 'a.txt'), '/fs/write'],
  ['POST', '/admin/reset', 'command', ws, '/admin/reset'],
  // Dot segments are removed and the server gets the path without them: one reading left.
  ['POST', '/fs/x/../write', 'write', join(ws, 'a.txt'), '/fs/write'],
  ['POST', '/fs/./write', 'write', join(ws, 'a.txt'), '/fs/write'],
  ['POST', '/fs/x/%2e%2E/write', 'write', join(ws, 'a.txt'), '/fs/write'],
  ['POST', '/../fs/write', 'write', join(ws, 'a.txt'), '/fs/write'],
  ['POST', '/run', 'command', ws, '/run'],
  // A path in the query goes as the absolute path judged, in one spelling; the rest as sent.
  ['GET', '/fs/read?path=a.txt', 'read', 'a.txt', `/fs/read?path=${enc(join(ws, 'a.txt'))}`],
  ['HEAD', '/fs/read?path=b.txt', 'read', 'b.txt', `/fs/read?path=${enc(join(ws, 'b.txt'))}`],
  [
    'GET',
    '/fs/read?x=1&p%61th=a+b.txt&y=%2F',
    'read',
    'a b.txt',
    `/fs/read?x=1&path=${enc(join(ws, 'a b.txt'))}&y=%2F`,
  ],
  ['GET', '/fs/read?path=%C3%A9.txt', 'read', 'é.txt', `/fs/read?path=${enc(join(ws, 'é.txt'))}`],
  // Segment targets of kinds that are not paths are opaque strings, forwarded as sent.
  ['DELETE', '/jobs/a%20b', 'job', 'a b', '/jobs/a%20b'],
  ['DELETE', '/jobs/%c3%a9', 'job', 'é', '/jobs/%C3%A9'],
  ['GET', '/docs/guide/intro', 'topic', 'guide', '/docs/guide/intro'],
  ['GET', '/status', 'tool', 'GET /status', '/status'],
  ['GET', '/a/../status', 'tool', 'GET /status', '/status'],
  ['GET', '/pkg/%40scope%2Fname', 'tool', 'GET /pkg/%40scope%2Fname', '/pkg/%40scope%2Fname'],
  ['GET', '/x/a;v=1', 'tool', 'GET /x/a;v=1', '/x/a;v=1'],
];

describe('route spellings that match one way', () => {
  it.each(matched)('%s %s → %s %s, the tool server gets %s', async (m, path, kind, target, got) => {
    const before = tools.seen.length;
    const res = await send(m, path);
    expect(res.status).toBe(200);
    expect(tools.seen.slice(before).map((s) => `${s.method} ${s.url}`)).toEqual([`${m} ${got}`]);
    const event = journal().filter(isEvent).at(-1);
    expect(event).toMatchObject({ kind, target, verdict: 'ALLOW' });
    // Its outcome comes after the answer; the rows below count the records they add.
    await waitForRecords(g, outcomeOf(event?.seq));
  });
});

// [method, request target, what the reason names]
const refused: [string, string, RegExp][] = [
  ['POST', '/fs%2Fwrite', /encoded "\/" or "\\"/],
  ['POST', '/fs%2fwrite', /write route POST \/fs\/write/],
  ['POST', '/fs%5Cwrite', /encoded "\/" or "\\"/],
  ['POST', '/fs\\write', /encoded "\/" or "\\"/],
  ['POST', '/fs/write;x=1', /drops ";" parameters/],
  ['POST', '/fs;v=1/write', /drops ";" parameters/],
  ['POST', '/fs/x/..;/write', /hides a dot segment/],
  ['POST', '/fs/%2577rite', /decodes twice/],
  ['POST', '/fs/x/%252e%252e/write', /hides a dot segment/],
  ['POST', '/fs//write', /merges empty segments/],
  ['POST', '/fs/wr%C4%B1te', /upper-cases Unicode/],
  ['POST', '/fs/%EF%BD%97rite', /NFKC/],
  ['POST', '//fs/write', /single "\/"/],
  ['POST', '/fs/write%FF', /not UTF-8/],
  ['POST', '/fs/write#x', /"#"/],
  ['POST', '/fs/wr%te', /two hex digits/],
  ['DELETE', '/jobs/a%2Fb', /job route DELETE \/jobs\/\* with target "a\/b" .* no route/],
  ['GET', '/docs/a%2Fb', /target "a\/b" .* target "a"/],
  ['DELETE', '/trash/%2Fetc%2Fpasswd', /target "\/etc\/passwd" .* no route/],
  ['DELETE', '/trash/..%2F..%2Fetc%2Fpasswd', /hides a dot segment/],
  // A path segment cannot carry the absolute path judged (its "/" would be encoded).
  ['DELETE', '/trash/a.txt', /segment 2 "a\.txt" is the path \/.*a path segment cannot carry/],
  ['GET', '/fs/read?path=a.txt;path=/etc/passwd', /";"/],
  ['GET', '/fs/read?PATH=/etc/passwd&path=a.txt', /"PATH" may be read as "path"/],
  ['GET', '/fs/read?path[]=/etc/passwd&path=a.txt', /"path\[\]" may be read as "path"/],
  ['GET', '/fs/read?path=a.txt&path=/etc/passwd', /"path" is repeated/],
  ['GET', '/fs/read?path=a.txt&p%61th=/etc/passwd', /"path" is repeated/],
  ['GET', '/fs/read?PATH[]=/etc/passwd&path=a.txt', /"PATH\[\]" may be read as "path"/],
  ['GET', '/fs/read?path.x=/etc&path=a.txt', /"path\.x" may be read as "path"/],
  ['GET', '/fs/read?%EF%BD%90ath=/etc/passwd&path=a.txt', /"[^"]+ath" may be read as "path"/],
  // A query parameter named like the judged body field: a server merging the two may take it.
  ['POST', '/fs/write?path=/etc/passwd', /query parameter "path" may be read as the body field/],
  ['POST', '/fs/write?PATH=/etc/passwd', /"PATH" may be read as the body field "path"/],
  ['POST', '/fs/write?pa%74h=/etc/passwd', /"path" may be read as the body field "path"/],
  ['POST', '/fs/write?path[]=/etc/passwd', /"path\[\]" may be read as the body field/],
  ['POST', '/fs/write?x=1;path=/etc/passwd', /"path" may be read as the body field/],
  ['POST', '/fs/write?%EF%BD%90ath=/etc/passwd', /"[^"]+ath" may be read as the body field "path"/],
  ['POST', '/fs/write?%20path=/etc/passwd', /" path" may be read as the body field "path"/],
  ['POST', '/run?cwd=/', /"cwd" may be read as the body field "cwd"/],
  ['POST', '/run?options[cwd]=/', /"options\[cwd\]" may be read as the body field "options"/],
  ['POST', '/run?Options.cwd=/', /"Options\.cwd" may be read as the body field "options"/],
];

describe('route spellings another server reads differently', () => {
  it.each(refused)('%s %s → 400, one record, nothing forwarded', async (m, path, says) => {
    const before = tools.seen.length;
    const records = journal().length;
    const res = await send(m, path);
    expect(res.status).toBe(400);
    expect(res.body).toMatch(/^trajgate: [^\n]+\n$/);
    expect(res.body).toMatch(says);
    const added = journal().slice(records);
    expect(added).toEqual([
      expect.objectContaining({
        type: 'refusal',
        source: 'bridge',
        session: 'agent-1',
        status: 400,
      }),
    ]);
    expect(tools.seen.length).toBe(before);
  });
});

describe('method overrides at an HTTP tool server', () => {
  // The route is chosen by method: a server honouring an override would run another route.
  it.each([
    ['/fs/write', 'X-HTTP-Method-Override: DELETE', /the X-HTTP-Method-Override header/],
    ['/fs/write', 'x_http_method: GET', /the x_http_method header/],
    ['/fs/write?_method=DELETE', '', /the query parameter "_method"/],
    ['/fs/write?a=1&%5FMethod=GET', '', /the query parameter "%5FMethod"/],
  ])('POST %s %s → 400, one record, nothing forwarded', async (path, field, says) => {
    const before = tools.seen.length;
    const records = journal().length;
    const head = [
      `POST ${path} HTTP/1.1`,
      'Host: tools',
      `Authorization: Bearer ${TOKEN}`,
      ...(field === '' ? [] : [field]),
      'Content-Type: application/json',
      `Content-Length: ${body.length}`,
      'Connection: close',
    ];
    const res = await exchange(g.gw.bridge.port, `${head.join('\r\n')}\r\n\r\n${body}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatch(/^trajgate: method overrides are not allowed \(/);
    expect(res.body).toMatch(says);
    expect(journal().slice(records)).toEqual([
      expect.objectContaining({ type: 'refusal', source: 'bridge', status: 400 }),
    ]);
    expect(tools.seen.length).toBe(before);
  });
});
