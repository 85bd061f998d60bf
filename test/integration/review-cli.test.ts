import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminClient } from '../helpers/admin.js';
import { adminClient, agentAuth, viaProxy } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import type { CurlResult } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The operator CLI (`sessions`, `events`, `approve`, `resume`, `deny`) against a gateway in
 * this process, so the CLI runs asynchronously (execFile). `--json` output is parsed; the
 * tables are checked for their header line and rows.
 */
const other = await startUpstream();
const ADMIN = 'operator-admin-token-0123456789';
const AGENTS = [
  { id: 'agent-1', token: 'agent-1-token-0123456789abcdef' },
  { id: 'agent-2', token: 'agent-2-token-0123456789abcdef' },
  { id: 'agent-3', token: 'agent-3-token-0123456789abcdef' },
];
const auth = (i: number) => agentAuth(AGENTS[i]!.id, AGENTS[i]!.token);
const cwd = tempDir();

let g: TestGateway;
let api: AdminClient;

beforeAll(async () => {
  g = await startTestGateway({
    agents: AGENTS,
    // The request held in the first test is released four tests (a dozen CLI runs) later.
    policy: { holdTimeout: '10m' },
    network: { allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
  });
  api = adminClient(g.gw.admin.port, ADMIN);
});
afterAll(() => g.stop());

/** The operator CLI against the test gateway, with the token in TRAJGATE_ADMIN_TOKEN. */
function op(args: string[], token: string | undefined = ADMIN) {
  return runCliAsync([...args, '--admin', `http://127.0.0.1:${g.gw.admin.port}`], {
    cwd,
    env: { TRAJGATE_ADMIN_TOKEN: token },
  });
}

async function json(args: string[]) {
  const r = await op([...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout);
}

async function pause(i: number): Promise<{ held: Promise<CurlResult> }> {
  const id = AGENTS[i]!.id;
  expect((await viaProxy(g.proxyUrl, `${other.url}/first-${i}`, auth(i))).status).toBe(403);
  const held = viaProxy(g.proxyUrl, `${other.url}/second-${i}`, auth(i));
  await waitFor(async () => (await api.get(`/api/sessions/${id}`)).json.held === 1);
  return { held };
}

describe('operator commands', () => {
  let held: Promise<CurlResult>;

  it('sessions: a table with a header, and --json', async () => {
    const empty = await op(['sessions']);
    expect(empty.status).toBe(0);
    expect(empty.stdout.split('\n')[0]).toMatch(
      /^SESSION +STATE +COUNTS +PAUSED AT +HELD +LAST ACTIVITY +CREDENTIALS$/,
    );
    ({ held } = await pause(0));
    const out = await op(['sessions']);
    expect(out.status).toBe(0);
    const [head, first, second] = out.stdout.trimEnd().split('\n');
    expect(head).toMatch(/^SESSION +STATE/);
    expect(first).toMatch(
      /^agent-1 +PAUSED \(network\) +network=2 +\d{4}-\d\d-\d\dT\S+ +1 +\S+ +-$/,
    );
    expect(second).toMatch(/^agent-2 +active +- +- +0 +- +-$/);
    const parsed = await json(['sessions']);
    expect(parsed.sessions[0]).toMatchObject({
      id: 'agent-1',
      state: 'paused',
      counts: { network: 2 },
      held: 1,
    });
    // Every session, pages followed, as `{"sessions":[…]}` like the API's first page here.
    expect(parsed).toEqual({ sessions: (await api.get('/api/sessions')).json.sessions });
  });

  it('events SESSION: newest first, --limit and --before; a table with a header', async () => {
    const page = await json(['events', 'agent-1', '--limit', '1']);
    expect(page.events.map((e: { verdict: string }) => e.verdict)).toEqual(['PAUSE']);
    expect(page.next).toBe(page.events[0].seq);
    const rest = await json(['events', 'agent-1', '--before', String(page.next)]);
    expect(rest.events.map((e: { target: string }) => e.target)).toEqual([`${other.url}/first-0`]);
    const table = await op(['events', 'agent-1']);
    const [head, ...rows] = table.stdout.trimEnd().split('\n');
    expect(head).toMatch(/^SEQ +TIME +VERDICT +KIND +TARGET +REASON$/);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatch(new RegExp(`PAUSE: network +network +GET ${other.url}/second-0 `));
    expect(rows[1]).toMatch(/REVIEW: network/);
    expect((await op(['events', 'agent-2'])).stdout).toBe('no events\n');
  });

  it('approve SESSION PATTERN [--ttl]: --json and text; recorded', async () => {
    const pattern = `127.0.0.1:${other.port}`;
    const res = await json(['approve', 'agent-1', pattern, '--ttl', '1h']);
    expect(res.approval).toMatchObject({ pattern, kind: 'network', session: 'agent-1' });
    const ttl = Date.parse(res.approval.expiresAt) - Date.now();
    expect(ttl).toBeGreaterThan(3_590_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);
    const text = await op(['approve', 'agent-2', 'pkg.example']);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(
      /^approved pkg\.example for agent-2 \(id (a\d+); undo: trajgate revoke \1\)\n$/,
    );
    const detail = (await api.get('/api/sessions/agent-2')).json;
    expect(detail.approvals).toContainEqual(
      expect.objectContaining({
        pattern: 'pkg.example',
        kind: 'network',
        session: 'agent-2',
        expiresAt: null,
        origin: 'operator',
      }),
    );
  });

  it('resume SESSION: releases the held request (now approved) → 200', async () => {
    const res = await json(['resume', 'agent-1']);
    expect(res).toEqual({ resumed: true, released: 1, pausedAgain: null });
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).url).toBe('/second-0');
    expect((await api.get('/api/sessions/agent-1')).json.state).toBe('active');
  });

  it('deny SESSION: held request 403, still paused; text output; resume --reset', async () => {
    const { held: held2 } = await pause(1);
    const out = await op(['deny', 'agent-2']);
    expect(out.status).toBe(0);
    expect(out.stdout).toBe('denied agent-2; 1 held request(s) refused; still paused\n');
    expect((await held2).status).toBe(403);
    expect((await api.get('/api/sessions/agent-2')).json.state).toBe('paused');
    const again = await json(['deny', 'agent-2']);
    expect(again).toEqual({ denied: true, released: 0 });
    const reset = await op(['resume', 'agent-2', '--reset']);
    expect(reset.stdout).toBe(
      'resumed agent-2 with its counts reset; 0 held request(s) judged again\n',
    );
    expect((await api.get('/api/sessions/agent-2')).json).toMatchObject({
      state: 'active',
      counts: {},
    });
    const ops = g.records().filter((r) => r.type === 'resume' || r.type === 'deny');
    expect(ops.map((r) => [r.type, r.session, r.type === 'resume' && r.reset])).toEqual([
      ['resume', 'agent-1', false],
      ['deny', 'agent-2', false],
      ['deny', 'agent-2', false],
      ['resume', 'agent-2', true],
    ]);
  });

  it('resume of a request nobody approved: it pauses the session again at once, and resume says so', async () => {
    const { held } = await pause(2);
    const out = await op(['resume', 'agent-3']);
    expect(out.status).toBe(0);
    const [, event] = g
      .records()
      .filter((r) => r.type === 'event' && r.session === 'agent-3' && r.verdict === 'PAUSE');
    expect(event).toBeDefined();
    expect(out.stdout).toBe(
      'resumed agent-3; 1 held request(s) judged again\n' +
        `but #${event!.seq} network GET ${other.url}/second-2 paused agent-3 again at once: ` +
        `PAUSE: network (${event!.type === 'event' ? event!.reason : ''}); decide again (trajgate events agent-3)\n`,
    );
    expect((await api.get('/api/sessions/agent-3')).json.state).toBe('paused');
    await api.post('/api/sessions/agent-3/deny');
    expect((await held).status).toBe(403);
  });

  it('API errors exit 1 with the API message', async () => {
    const rows: [string[], RegExp][] = [
      [['resume', 'agent-1'], /409 cannot resume session "agent-1": it is not paused/],
      [['deny', 'agent-1'], /409 cannot deny session "agent-1": it is not paused/],
      [['events', 'nobody'], /404 no session "nobody"/],
      [
        ['approve', 'agent-1', 'pk*g.example'],
        /400 pattern "pk\*g\.example": "\*" is only allowed/,
      ],
      [
        ['approve', 'agent-1', 'pkg.example', '--ttl', 'soon'],
        /400 field "ttl" must be a duration/,
      ],
      [['events', 'agent-1', '--limit', 'lots'], /400 query "limit" must be a whole number/],
    ];
    for (const [args, message] of rows) {
      const r = await op(args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.stdout).toBe('');
    }
  });
});
