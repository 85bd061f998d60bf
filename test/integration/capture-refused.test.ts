import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { CapturedExchange } from '../../src/action/capture.js';
import type { EventRecord } from '../../src/journal/records.js';
import { viaProxy } from '../helpers/admin.js';
import { exportHar } from '../helpers/cli.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { auth, reviewStage } from '../helpers/review-story.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * With `capture.bodies`, a refused or held request is captured too, body included, though it
 * is never forwarded: stored as text when it is text, decoded when compressed (bounded), served
 * by the admin API per session, and exported as HAR `postData`. `other` is not allowlisted.
 */
const { other, start, pause } = await reviewStage();
const capturing = (maxBytes = 65_536) => start({ capture: { bodies: true, maxBytes } });

const capturesOf = (g: TestGateway) => join(dirname(g.journalPath), 'captures');
async function captured(g: TestGateway, rid: number): Promise<CapturedExchange> {
  const file = join(capturesOf(g), `${rid}.json`);
  await waitFor(() => existsSync(file));
  return JSON.parse(readFileSync(file, 'utf8')) as CapturedExchange;
}
const eventOf = (g: TestGateway, path: string) =>
  g.records().find((r) => r.type === 'event' && r.target.endsWith(path)) as EventRecord;
const post = (g: TestGateway, path: string, args: string[], agent = 0) =>
  curl([...auth(agent), '-x', g.proxyUrl, ...args, `${other.url}${path}`]);

const harEntries = (out: string) => JSON.parse(readFileSync(out, 'utf8')).log.entries;

const JSON_BODY = '{"query":"SELECT * FROM users","token":"café"}';

describe('captures of refused requests', () => {
  it('a refused JSON POST: its body stored as text, the refusal as the response, nothing forwarded', async () => {
    const [g, api] = await capturing();
    const seen = other.seen.length;
    const res = await post(g, '/v1/upload', [
      '-H',
      'Content-Type: application/json',
      '-H',
      'Authorization: Bearer agent-secret-0123',
      '--data-binary',
      JSON_BODY,
    ]);
    expect(res.status).toBe(403);
    expect(res.headers['x-trajgate-verdict']).toMatch(/^REVIEW/);
    const event = eventOf(g, '/v1/upload');
    const c = await captured(g, event.seq);
    expect(c).toMatchObject({ rid: event.seq, session: 'agent-1', forwarded: false });
    expect(c.request).toMatchObject({
      method: 'POST',
      url: `${other.url}/v1/upload`,
      body: JSON_BODY,
      encoding: 'text',
      size: Buffer.byteLength(JSON_BODY),
      truncated: false,
    });
    const secrets = c.request.headers.filter(([n]) => /authorization/i.test(n));
    expect(secrets.map(([, v]) => v)).toEqual(['[redacted]', '[redacted]']);
    expect(c.response).toMatchObject({ status: 403, encoding: 'text', truncated: false });
    expect(c.response?.body).toBe(res.body);
    expect(other.seen.length).toBe(seen); // never forwarded
    expect(readFileSync(g.journalPath, 'utf8')).not.toContain('SELECT');

    // the admin API serves it to the session it belongs to, and to no other
    const got = await api.get(`/api/sessions/agent-1/captures/${event.seq}`);
    expect(got.status).toBe(200);
    expect(got.json.capture).toEqual(c);
    const elsewhere = await api.get(`/api/sessions/agent-2/captures/${event.seq}`);
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.json.error.code).toBe('E_NO_CAPTURE');
    expect((await api.get(`/api/sessions/agent-1/captures/999999`)).json.error.code).toBe(
      'E_NO_CAPTURE',
    );
    const bad = await api.get(`/api/sessions/agent-1/captures/x1`);
    expect([bad.status, bad.json.error.code]).toEqual([400, 'E_BAD_FIELD']);
    const unauth = await api.get(`/api/sessions/agent-1/captures/${event.seq}`, { token: null });
    expect(unauth.status).toBe(401);

    // and the HAR export has it as the refused request's postData
    const r = await exportHar(g.journalPath, 'agent-1');
    expect([r.status, r.stderr]).toEqual([0, '']);
    const [entry] = harEntries(r.out);
    expect(entry).toMatchObject({
      request: {
        method: 'POST',
        bodySize: Buffer.byteLength(JSON_BODY),
        postData: { mimeType: 'application/json', text: JSON_BODY },
      },
      response: { status: 403, content: { mimeType: 'text/plain; charset=utf-8' } },
      _trajgate: { verdict: 'REVIEW', forwarded: false },
    });
  });

  it('a gzip-compressed POST is decoded for the capture; the HAR has it as postData', async () => {
    const [g] = await capturing();
    const dir = tempDir();
    const gz = join(dir, 'body.gz');
    writeFileSync(gz, gzipSync(JSON_BODY));
    const res = await post(g, '/v2/gz', [
      '-H',
      'Content-Type: application/json; charset=utf-8',
      '-H',
      'Content-Encoding: gzip',
      '--data-binary',
      `@${gz}`,
    ]);
    expect(res.status).toBe(403);
    const event = eventOf(g, '/v2/gz');
    const c = await captured(g, event.seq);
    expect(c.request).toMatchObject({
      body: JSON_BODY,
      encoding: 'text',
      decoded: ['gzip'],
      size: gzipSync(JSON_BODY).length,
      truncated: false,
    });

    const r = await exportHar(g.journalPath, 'agent-1');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const [entry] = harEntries(r.out);
    expect(entry).toMatchObject({
      request: {
        method: 'POST',
        url: `${other.url}/v2/gz`,
        postData: { mimeType: 'application/json; charset=utf-8', text: JSON_BODY },
      },
      response: { status: 403 },
      _trajgate: { verdict: 'REVIEW', forwarded: false },
    });
    expect(entry.request.postData.encoding).toBeUndefined();
  });

  it('a gzip bomb stops at maxBytes of decoded output, flagged truncated', async () => {
    const [g] = await capturing(4_096);
    const dir = tempDir();
    const bomb = gzipSync(Buffer.alloc(20_000_000, 'a'));
    expect(bomb.length).toBeLessThan(4_096 * 8);
    writeFileSync(join(dir, 'bomb.gz'), bomb);
    const res = await post(g, '/bomb', [
      '-H',
      'Content-Type: text/plain',
      '-H',
      'Content-Encoding: gzip',
      '--data-binary',
      `@${join(dir, 'bomb.gz')}`,
    ]);
    expect(res.status).toBe(403);
    const c = await captured(g, eventOf(g, '/bomb').seq);
    expect(c.request).toMatchObject({ encoding: 'text', decoded: ['gzip'], truncated: true });
    expect(c.request.body).toBe('a'.repeat(4_096));
  });

  it('binary is base64; a body the agent holds back for 100 Continue is not invited', async () => {
    const [g] = await capturing();
    const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 10, 13]);
    const dir = tempDir();
    writeFileSync(join(dir, 'bin'), bytes);
    const res = await post(g, '/bin', [
      '-H',
      'Content-Type: application/octet-stream',
      '--data-binary',
      `@${join(dir, 'bin')}`,
    ]);
    expect(res.status).toBe(403);
    const c = await captured(g, eventOf(g, '/bin').seq);
    expect(c.request).toMatchObject({ encoding: 'base64', truncated: false });
    expect(Buffer.from(c.request.body, 'base64')).toEqual(bytes);

    const started = Date.now();
    const waiting = await post(
      g,
      '/expect',
      [
        '-H',
        'Expect: 100-continue',
        '--expect100-timeout',
        '10',
        '--data-binary',
        'x'.repeat(2_000),
      ],
      1, // agent-2: agent-1's second refusal would pause it
    );
    expect([waiting.status, waiting.stderr]).toEqual([403, '']);
    expect(Date.now() - started).toBeLessThan(5_000); // answered, not waiting for the body
    const e = await captured(g, eventOf(g, '/expect').seq);
    expect(e.request).toMatchObject({ body: '', size: 0, truncated: true });
  });

  it('a held request: its body is captured when the hold ends in a refusal', async () => {
    const [g, api] = await capturing();
    await pause(g, api, 0); // REVIEW, then a held GET
    const held = post(g, '/held-post', [
      '-H',
      'Content-Type: application/json',
      '--data-binary',
      '{"exfiltrate":"~/.ssh/id_ed25519"}',
    ]);
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 2);
    expect((await api.post('/api/sessions/agent-1/deny')).status).toBe(200);
    expect((await held).status).toBe(403);
    const event = eventOf(g, '/held-post');
    expect(event.held).toBe(true);
    const c = await captured(g, event.seq);
    expect(c).toMatchObject({ forwarded: false, response: { status: 403 } });
    expect(c.request).toMatchObject({
      body: '{"exfiltrate":"~/.ssh/id_ed25519"}',
      encoding: 'text',
    });
    const fromApi = await api.get(`/api/sessions/agent-1/captures/${event.seq}`);
    expect(fromApi.json.capture.request.body).toContain('exfiltrate');
  });
});

describe('trajgate export', () => {
  it('an unknown session exits non-zero with a clear message and writes nothing', async () => {
    const [g] = await capturing();
    expect((await viaProxy(g.proxyUrl, `${other.url}/x`, auth(0))).status).toBe(403);
    const r = await exportHar(g.journalPath, 'nobody');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /no session "nobody" in the journal .*journal\.jsonl; nothing was written/,
    );
    expect(existsSync(r.out)).toBe(false);
  });
});
