import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { EventRecord, PauseJournalRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { interceptConfig, makeLocalCa, runNode } from '../helpers/tls.js';
import { tempDir, textUnder } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitForRecords } from '../helpers/wait.js';

/**
 * Credentials the agent never holds, end to end with real clients over intercepted TLS: the
 * upstream (which echoes what it got) sees the real value where the agent wrote the sentinel;
 * the agent, the journal and every file trajgate writes see only the sentinel.
 */
const ca = makeLocalCa();
const api = await startUpstream({ tls: true });
const other = await startUpstream({ tls: true });
const plain = await startUpstream();
const API = `https://127.0.0.1:${api.port}`;
const OTHER = `https://localhost:${other.port}`;
const REAL = 'ghp_real-value-never-seen-0123456789';
const SENTINEL = 'tgs_github_0123456789abcdef';

const gateways = gatewayPerTest({});
const start = (
  credential: Record<string, unknown> = {},
  limits: Record<string, unknown> = {},
): Promise<TestGateway> =>
  gateways.start({
    ...interceptConfig({
      ca,
      intercept: [`127.0.0.1:${api.port}`, `localhost:${other.port}`],
      allow: [`127.0.0.1:${api.port}`, `localhost:${other.port}`, `127.0.0.1:${plain.port}`],
      ports: [api.port, other.port, plain.port],
      policy: { pause: 'block' },
      capture: { bodies: true },
      limits,
    }),
    credentials: [
      {
        name: 'github',
        value: REAL,
        sentinel: SENTINEL,
        hosts: [`127.0.0.1:${api.port}`],
        scheme: 'Bearer',
        ...credential,
      },
    ],
  });

const via = (g: TestGateway) => ['--cacert', ca.certPath, '-x', g.proxyUrl, '-s', '--http1.1'];
const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');
const lastSeen = () => api.seen.at(-1)!;

/** Every file under the gateway's data folder, as text. */
/** Every file trajgate wrote beside its journal (captures, keys), as text. */
const everything = (g: TestGateway): string => textUnder(dirname(g.journalPath));

describe('a sentinel on its way to its own host', () => {
  it('curl: the header sentinel reaches the upstream as the value; the agent and trajgate see the sentinel', async () => {
    const g = await start();
    const res = await curl([...via(g), '-H', `Authorization: Bearer ${SENTINEL}`, `${API}/user`]);
    expect(res.status).toBe(200);
    expect(lastSeen().headers.authorization).toBe(`Bearer ${REAL}`);
    // The upstream echoed the value back: scrubbed on its way to the agent.
    expect(res.body).toContain(SENTINEL);
    expect(res.body).not.toContain(REAL);
    const [event] = events(g);
    expect(event).toMatchObject({ verdict: 'ALLOW', credentials: ['github'] });
    await waitForRecords(g, (r) => r.type === 'outcome');
    expect(everything(g)).not.toContain(REAL);
  });

  it('Node fetch: sentinels in the query and a JSON body are swapped, Content-Length follows', async () => {
    const g = await start();
    const run = await runNode(
      `import { fetch, ProxyAgent } from 'undici';
       const dispatcher = new ProxyAgent(process.env.PROXY);
       const res = await fetch(process.env.URL + '/repos?token=${SENTINEL}', {
         dispatcher, method: 'POST', headers: { 'content-type': 'application/json' },
         body: JSON.stringify({ note: 'token ${SENTINEL} inside', list: ['${SENTINEL}'] }),
       });
       process.stdout.write(String(res.status) + '\\n' + await res.text());`,
      { PROXY: g.proxyUrl, URL: API, NODE_EXTRA_CA_CERTS: ca.certPath },
    );
    expect(run.stdout.split('\n')[0]).toBe('200');
    const seen = lastSeen();
    expect(seen.url).toBe(`/repos?token=${encodeURIComponent(REAL)}`);
    expect(JSON.parse(seen.body)).toEqual({ note: `token ${REAL} inside`, list: [REAL] });
    expect(Number(seen.headers['content-length'])).toBe(Buffer.byteLength(seen.body));
    expect(run.stdout).not.toContain(REAL);
  });

  it('Python requests: the agent sends no credential at all, trajgate places the header', async () => {
    const g = await start();
    const script = `import requests, sys
r = requests.get(sys.argv[1], proxies={"https": sys.argv[2]}, verify=sys.argv[3])
print(r.status_code); print(r.text)`;
    const out = await new Promise<string>((resolve) =>
      execFile(
        '/usr/bin/python3',
        ['-c', script, `${API}/py`, g.proxyUrl, ca.certPath],
        (_e, o, e) => resolve(o + e),
      ),
    );
    expect(out.split('\n')[0]).toBe('200');
    expect(lastSeen().headers.authorization).toBe(`Bearer ${REAL}`);
    expect(out).not.toContain(REAL);
    expect(events(g)[0]).toMatchObject({ credentials: ['github'] });
  });

  it('a gzip body and a Basic header (git over HTTPS) are swapped in the spelling the upstream decodes', async () => {
    const g = await start();
    const body = gzipSync(Buffer.from(`{"token":"${SENTINEL}"}`));
    const file = join(tempDir(), 'body.gz');
    writeFileSync(file, body);
    const basic = Buffer.from(`x-access-token:${SENTINEL}`).toString('base64');
    const res = await curl([
      ...via(g),
      '-H',
      `Authorization: Basic ${basic}`,
      '-H',
      'Content-Encoding: gzip',
      '--data-binary',
      `@${file}`,
      `${API}/git`,
    ]);
    expect(res.status).toBe(200);
    const seen = lastSeen();
    expect(Buffer.from(seen.headers.authorization!.slice(6), 'base64').toString()).toBe(
      `x-access-token:${REAL}`,
    );
    expect(seen.headers['content-encoding']).toBe('gzip');
  });

  it('plain HTTP to its host is refused with the reason unless allowPlaintext', async () => {
    const g = await start({ hosts: [`127.0.0.1:${plain.port}`] });
    const before = plain.seen.length;
    const res = await curl([
      '-x',
      g.proxyUrl,
      '-s',
      '-H',
      `Authorization: Bearer ${SENTINEL}`,
      `http://127.0.0.1:${plain.port}/`,
    ]);
    expect(res.status).toBe(403);
    expect(res.body).toContain('only over TLS trajgate verifies');
    expect(plain.seen.length).toBe(before);
  });

  it('a body too large to swap is refused, not forwarded', async () => {
    const small = await start({}, { scanBodyBytes: 1024 });
    const before = api.seen.length;
    const res = await curl([...via(small), '--data-binary', 'x'.repeat(4096), `${API}/big`]);
    expect(res.status).toBe(403);
    expect(res.body).toContain('larger than limits.scanBodyBytes (1024 bytes)');
    expect(api.seen.length).toBe(before);
  });

  it('a revoked credential is refused at once; restored, it is swapped again', async () => {
    const g = await start();
    g.gw.credentials.revoke('github');
    const res = await curl([...via(g), '-H', `Authorization: Bearer ${SENTINEL}`, `${API}/r`]);
    expect(res.status).toBe(403);
    expect(res.body).toContain('credential github was revoked');
    g.gw.credentials.revoke('github', false);
    const again = await curl([...via(g), '-H', `Authorization: Bearer ${SENTINEL}`, `${API}/r`]);
    expect(again.status).toBe(200);
    expect(lastSeen().headers.authorization).toBe(`Bearer ${REAL}`);
  });
});

describe('a sentinel anywhere else pauses the session at once', () => {
  it.each([
    ['a header', ['-H', `X-Note: ${SENTINEL}`], '/h', 'header X-Note'],
    ['the URL', [], `/u?leak=${SENTINEL}`, 'url'],
    [
      'the body, base64',
      ['--data-binary', Buffer.from(`k=${SENTINEL}`).toString('base64')],
      '/b',
      'body (base64)',
    ],
  ])('in %s', async (_name, args, path, where) => {
    const g = await start();
    const before = other.seen.length;
    const res = await curl([...via(g), ...args, `${OTHER}${path}`]);
    expect(res.status).toBe(403);
    expect(other.seen.length).toBe(before);
    const records = await waitForRecords(g, (r) => r.type === 'pause');
    const pause = records.find((r) => r.type === 'pause');
    expect(pause).toMatchObject({ boundary: 'credential-exfiltration' });
    expect((pause as PauseJournalRecord).trigger.exfiltration).toEqual({
      credential: 'github',
      where,
    });
    expect(everything(g)).not.toContain(REAL);
  });

  it('over HTTP/2, the refusal comes on the connection the pause froze, not when it is closed', async () => {
    // Idle connections live far longer than curl waits (30 s, against ~55 s before the frozen
    // connection gave the answer up): only an answer while frozen arrives in time.
    const g = await start({}, { keepAliveIdle: '120s' });
    const res = await curl(
      [
        '--cacert',
        ca.certPath,
        '-x',
        g.proxyUrl,
        '-s',
        '--http2',
        '-w',
        '%{http_version}',
        '-H',
        `X-Note: ${SENTINEL}`,
        `${OTHER}/h2`,
      ],
      30_000,
    );
    expect(res.status).toBe(403);
    expect(res.body).toMatch(/credential github's sentinel in header x-note[\s\S]*2$/);
    expect(g.gw.sessions.isPaused('127.0.0.1')).toBe(true);
  });

  it("another credential's sentinel in a gzip body to this one's host", async () => {
    const OTHER_SENTINEL = 'tgs_npm_0123456789abcdef';
    const g = await gateways.start({
      ...interceptConfig({
        ca,
        intercept: [`127.0.0.1:${api.port}`],
        allow: [`127.0.0.1:${api.port}`],
        ports: [api.port],
        policy: { pause: 'block' },
      }),
      credentials: [
        { name: 'github', value: REAL, sentinel: SENTINEL, hosts: [`127.0.0.1:${api.port}`] },
        {
          name: 'npm',
          value: 'npm_real-value-0123456789',
          sentinel: OTHER_SENTINEL,
          hosts: ['registry.npmjs.org'],
        },
      ],
    });
    const file = join(tempDir(), 'gist.gz');
    writeFileSync(file, gzipSync(Buffer.from(`{"content":"${OTHER_SENTINEL}"}`)));
    const before = api.seen.length;
    const args = ['-H', 'Content-Encoding: gzip', '--data-binary', `@${file}`, `${API}/gists`];
    expect((await curl([...via(g), ...args])).status).toBe(403);
    expect(api.seen.length).toBe(before);
    const records = await waitForRecords(g, (r) => r.type === 'pause');
    const pause = records.find((r): r is PauseJournalRecord => r.type === 'pause');
    expect(pause?.trigger.exfiltration).toEqual({ credential: 'npm', where: 'body' });
  });

  it('in a gzip body split over many chunks, as the upstream would decode it', async () => {
    const g = await start();
    const file = join(tempDir(), 'leak.gz');
    writeFileSync(
      file,
      gzipSync(Buffer.from(`${'x'.repeat(100_000)}${SENTINEL}${'y'.repeat(100_000)}`)),
    );
    const before = other.seen.length;
    const res = await curl([
      ...via(g),
      '-H',
      'Content-Encoding: gzip',
      '--data-binary',
      `@${file}`,
      `${OTHER}/gz`,
    ]);
    expect(res.status).toBe(403);
    expect(res.body).toContain("credential github's sentinel in body");
    expect(other.seen.length).toBe(before);
    const records = await waitForRecords(g, (r) => r.type === 'pause');
    expect(records.find((r) => r.type === 'pause')).toMatchObject({
      boundary: 'credential-exfiltration',
    });
  });
});
