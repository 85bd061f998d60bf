import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { journalFiles } from '../../src/journal/files.js';
import type { EventRecord, JournalRecord, ResultRecord } from '../../src/journal/records.js';
import type { PauseRecord } from '../../src/wire.js';
import { adminClient } from '../helpers/admin.js';
import { follow } from '../helpers/decision-links.js';
import { tempConfig } from '../helpers/child-gateway.js';
import { runCliAsync, runCliPiped, spawnCli } from '../helpers/cli.js';
import { agentToken, postAsAgent } from '../helpers/ingest.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhook } from '../helpers/webhook.js';

/**
 * A reviewer reads what a command ran. Real clients against `trajgate start`:
 * the Claude Code hook (`trajgate check --hook claude-code`, built CLI) and `POST /events` give
 * command lines; they are in the journal, `trajgate events`, the pause record (admin API,
 * also after a restart), `replay --json` and the webhook's chat text. Secrets in them (a
 * bearer token, a URL's and `-u`'s password, a token variable) reach none of those, nor the
 * gateway's log.
 */
const TOKEN = agentToken('claude');
const ADMIN = 'operator-admin-token-0123456789';
const SECRETS = [
  'hunter2-bearer-0123456789',
  'hunter2-userpw-0123456789',
  'hunter2-ghtoken-0123456789',
  'hunter2-dburl-0123456789',
  'hunter2-result-0123456789',
  'hunter2-refused-0123456789',
  'hunter2-long-0123456789',
];
const [BEARER, USERPW, GHTOKEN, DBURL, RESULT, REFUSED, LONG] = SECRETS as [string, ...string[]];
const CURL = `curl -fsS -H 'Authorization: Bearer ${BEARER}' -u bob:${USERPW} https://api.example.com/v1`;
const CURL_SHOWN = `curl -fsS -H 'Authorization: [redacted]' -u bob:[redacted] https://api.example.com/v1`;
const PUSH = `GITHUB_TOKEN=${GHTOKEN} git push origin main`;
const PUSH_SHOWN = 'GITHUB_TOKEN=[redacted] git push origin main';
const PSQL = `psql "postgres://app:${DBURL}@db/app" -c 'select 1'`;

const ws = tempDir('trajgate-ws-');
const outside = tempDir();
const hook = await startWebhook();
const { journal, config } = tempConfig({
  workspace: ws,
  agents: [{ id: 'claude', token: TOKEN }],
  admin: { token: ADMIN },
  // Refused at once when paused: no hook call waits for a person.
  policy: { pause: 'block' },
  notify: { webhook: hook.url, on: ['pause', 'review'] },
});

interface Running {
  readonly cli: ReturnType<typeof spawnCli>;
  readonly bridge: string;
  readonly admin: number;
}

/** `trajgate start` on the config (again: a restart on the same journal), logging everything. */
async function start(): Promise<Running> {
  const cli = spawnCli(['start', '--config', config], { env: { TRAJGATE_LOG_LEVEL: 'debug' } });
  const banner = await cli.waitFor(/review page on http:\/\/127\.0\.0\.1:\d+/, 15_000);
  const port = (re: RegExp) => Number(re.exec(banner)?.[1]);
  return {
    cli,
    bridge: `http://127.0.0.1:${port(/bridge on http:\/\/127\.0\.0\.1:(\d+)/)}`,
    admin: port(/review page on http:\/\/127\.0\.0\.1:(\d+)/),
  };
}

async function stop(g: Running): Promise<string> {
  g.cli.child.kill('SIGTERM');
  await g.cli.exited;
  return g.cli.output().stderr;
}

const bash = (cwd: string, command: string, hookName = 'PreToolUse', id = 'toolu_01') =>
  JSON.stringify({
    session_id: 's-1',
    cwd,
    hook_event_name: hookName,
    tool_name: 'Bash',
    tool_input: { command, description: 'run it' },
    tool_use_id: id,
    ...(hookName === 'PostToolUse' ? { tool_response: { stdout: 'ok', stderr: '' } } : {}),
  });

const checkHook = (g: Running, input: string) =>
  runCliPiped(['check', '--hook', 'claude-code', '--bridge', g.bridge], {
    input,
    env: { TRAJGATE_AGENT_TOKEN: TOKEN, TRAJGATE_BRIDGE: '' },
    timeoutMs: 30_000,
  });

const records = (): JournalRecord[] =>
  journalFiles(journal).flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as JournalRecord),
  );
const journalText = () =>
  journalFiles(journal)
    .map((f) => readFileSync(f, 'utf8'))
    .join('');
const events = () => records().filter((r): r is EventRecord => r.type === 'event');
const op = (g: Running, args: string[]) =>
  runCliAsync([...args, '--admin', `http://127.0.0.1:${g.admin}`], {
    env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
  });

const expectNoSecret = (where: string, text: string) => {
  for (const s of SECRETS) expect(text, `${where} holds ${s}`).not.toContain(s);
};

let g: Running;
/** Everything the first gateway logged, once stopped. */
let log = '';
beforeAll(async () => {
  g = await start();
}, 30_000);
afterAll(async () => {
  if (g.cli.child.exitCode === null) await stop(g);
});

describe('command lines, from the hook and the ingest route to everyone who reads them', () => {
  it('the hook and POST /events journal each command line, secrets redacted', async () => {
    // Claude Code's Bash in the workspace, before and after; a curl with credentials.
    expect(await checkHook(g, bash(ws, 'npm test'))).toMatchObject({ status: 0, stderr: '' });
    expect(await checkHook(g, bash(ws, 'npm test', 'PostToolUse'))).toMatchObject({ status: 0 });
    expect(await checkHook(g, bash(ws, CURL, 'PreToolUse', 'toolu_02'))).toMatchObject({
      status: 0,
    });
    // The ingest route: a command line, one past 2 KiB, a result naming its call's command.
    const asAgent = (path: string, body: unknown) =>
      postAsAgent(`${g.bridge}${path}`, 'claude', body);
    const psql = await asAgent('/events', { kind: 'command', target: ws, command: PSQL });
    expect(psql).toMatchObject({ status: 200, json: { verdict: 'ALLOW', allowed: true } });
    const long = `API_KEY=${LONG} ./build.sh ${'--flag '.repeat(2_000)}\u001b[2J`;
    const longAnswer = await asAgent('/events', { kind: 'command', target: ws, command: long });
    expect(longAnswer.status).toBe(200);
    const result = await asAgent('/events/result', {
      kind: 'command',
      target: ws,
      command: `TOKEN=${RESULT} make release`,
      ok: false,
      error: 'exit 2',
    });
    expect(result.status).toBe(200);
    // Refused with the reason, journaled as refusals; the value itself never quoted back.
    const onRead = await asAgent('/events', {
      kind: 'read',
      target: `${ws}/a.txt`,
      command: `echo ${REFUSED}`,
    });
    expect(onRead.status).toBe(400);
    expect(onRead.json.error.message).toMatch(/"command" is only for kind "command"/);
    const notText = await asAgent('/events', { kind: 'command', target: ws, command: 42 });
    expect(notText.status).toBe(400);
    expect(notText.json.error.message).toMatch(/"command" must be a non-empty string/);
    expectNoSecret('a 400 answer', JSON.stringify([onRead, notText]));

    // A command outside the workspace pauses the session: refused, the hook exits 2.
    const paused = await checkHook(g, bash(outside, PUSH, 'PreToolUse', 'toolu_03'));
    expect(paused.status).toBe(2);
    expect(paused.stderr).toMatch(/trajgate paused this session: command .* was not sent/);
    expectNoSecret('the hook output', paused.stdout + paused.stderr);

    const seen = events();
    expect(seen.map((e) => [e.kind, e.command, e.verdict])).toEqual([
      ['command', 'npm test', 'ALLOW'],
      ['command', CURL_SHOWN, 'ALLOW'],
      ['command', `psql "postgres://app:[redacted]@db/app" -c 'select 1'`, 'ALLOW'],
      ['command', expect.stringMatching(/^API_KEY=\[redacted\] \.\/build\.sh --flag /), 'ALLOW'],
      ['command', PUSH_SHOWN, 'PAUSE'],
    ]);
    expect(seen[0]).toMatchObject({ target: ws, source: 'ingest', call: 'toolu_01' });
    expect(seen[4]).toMatchObject({ target: outside, boundary: 'workspace' });
    // The long one: its prefix, with the whole's size and digest, the line well under 12 KB.
    const cut = seen[3] as EventRecord;
    expect(cut.commandBytes).toBeGreaterThan(14_000);
    expect(cut.commandSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(Buffer.byteLength(JSON.stringify(cut.command))).toBeLessThanOrEqual(2_050);
    for (const line of journalText().split('\n').filter(Boolean))
      expect(Buffer.byteLength(line)).toBeLessThan(6_000);
    const results = records().filter((r): r is ResultRecord => r.type === 'result');
    expect(results.map((r) => [r.command, r.ok])).toEqual([
      ['npm test', true],
      ['TOKEN=[redacted] make release', false],
    ]);
    const refusals = records().filter((r) => r.type === 'refusal');
    expect(refusals).toHaveLength(2);
    expectNoSecret('the journal', journalText());
  }, 120_000);

  it('trajgate events shows each command line after its folder; --json whole', async () => {
    const table = await op(g, ['events', 'claude']);
    expect(table.status).toBe(0);
    const rows = table.stdout.trimEnd().split('\n');
    expect(rows.find((r) => r.includes('npm test'))).toMatch(
      new RegExp(`ALLOW +command +${escape(ws)} \\$ npm test `),
    );
    expect(rows.find((r) => r.includes('git push'))).toContain(`${outside} $ ${PUSH_SHOWN}`);
    // The long one is cut in the table, its escape shown as `?` in a terminal.
    expect(rows.find((r) => r.includes('build.sh'))).toMatch(
      /\$ API_KEY=\[redacted\] \.\/build\.sh (--flag ){10}.*…/,
    );
    const json = await op(g, ['events', 'claude', '--json']);
    const listed = JSON.parse(json.stdout).events as EventRecord[];
    expect(listed.map((e) => e.command)).toContain(CURL_SHOWN);
    expectNoSecret('trajgate events', table.stdout + json.stdout + table.stderr + json.stderr);
  }, 60_000);

  it('the pause record (admin API) carries the trigger and recent events with their command lines', async () => {
    const api = adminClient(g.admin, ADMIN);
    const detail = await api.get('/api/sessions/claude');
    const pause = detail.json.pause as PauseRecord;
    expect(pause.trigger).toMatchObject({ kind: 'command', target: outside, command: PUSH_SHOWN });
    expect(pause.recent.map((e) => e.command)).toEqual([
      'npm test',
      CURL_SHOWN,
      expect.stringContaining('postgres://app:[redacted]@db/app'),
      expect.stringMatching(/^API_KEY=\[redacted\]/),
      PUSH_SHOWN,
    ]);
    const page = await api.get('/api/sessions/claude/events');
    const one = await api.get(`/api/events/${pause.trigger.seq}`);
    expect(one.json.event.command).toBe(PUSH_SHOWN);
    expectNoSecret('the admin API', detail.text + page.text + one.text);
  });

  it('the webhook says what ran, defanged like targets; no secret in any delivery', async () => {
    await waitFor(() => hook.deliveries.some((d) => d.body.kind === 'pause'), 10_000, 'pause');
    const body = hook.deliveries.find((d) => d.body.kind === 'pause')!.body;
    expect(body.trigger.command).toBe(PUSH_SHOWN);
    expect(body.text).toContain(
      `paused on workspace (crossing 1): command ${outside}: ${PUSH_SHOWN}; refused`,
    );
    expect(body.text).not.toMatch(/[\n\r]/);
    expectNoSecret('the webhook', JSON.stringify(hook.deliveries.map((d) => d.body)));
    // The decision page a chat reader opens (GET only shows; nothing is decided).
    const page = await follow(body.links.deny, 'GET', true);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<dt>Command</dt><dd><code>${PUSH_SHOWN}</code></dd>`);
    const view = await follow(body.links.deny);
    expect(view.json.trigger.command).toBe(PUSH_SHOWN);
    expectNoSecret('the decision page', page.text + view.text);
  });

  it('a restart reads them back: the pause record restored, replay --json shows them', async () => {
    log = await stop(g);
    g = await start();
    const api = adminClient(g.admin, ADMIN);
    const pause = (await api.get('/api/sessions/claude')).json.pause as PauseRecord;
    expect(pause.restored).toBe(true);
    expect(pause.trigger.command).toBe(PUSH_SHOWN);
    expect(pause.recent[1]?.command).toBe(CURL_SHOWN);
    log += await stop(g);
    const replay = await runCliAsync(['replay', journal, '--workspace', ws, '--json']);
    expect(replay.status).toBe(0);
    const lines = replay.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.command, l.verdict])).toEqual([
      ['npm test', 'ALLOW'],
      [CURL_SHOWN, 'ALLOW'],
      [expect.stringContaining('[redacted]@db'), 'ALLOW'],
      [expect.stringMatching(/^API_KEY=\[redacted\]/), 'ALLOW'],
      [PUSH_SHOWN, 'PAUSE'],
    ]);
    expectNoSecret('replay', replay.stdout + replay.stderr);
  }, 60_000);

  it('the gateway logged no secret (at debug level)', () => {
    expect(log).toMatch(/trajgate/);
    expectNoSecret('the log', log);
  });
});

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
