import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCliPiped } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * `trajgate check` fails closed: against a fake gateway (loopback, port 0) every answer but a
 * well-formed 2xx ALLOW exits 2 with a one-line reason, as do bad hook input and bad options.
 * Exit 1 never happens: a hook reads it as "go ahead".
 */
const TOKEN = 'hook-agent-token-0123456789abcdef';
let reply: (res: ServerResponse) => void;
const seen: { url: string; headers: IncomingHttpHeaders; body: string }[] = [];
const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    seen.push({ url: req.url ?? '', headers: req.headers, body });
    reply(res);
  });
});
let bridge: string;
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  bridge = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  seen.length = 0;
});

const answer = (status: number, body: string) => (res: ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body);
};
const check = (args: string[], input?: string) =>
  runCliPiped(['check', ...args, '--bridge', bridge], {
    env: { TRAJGATE_AGENT_TOKEN: TOKEN, TRAJGATE_BRIDGE: '' },
    ...(input === undefined ? {} : { input }),
  });
const read = ['--kind', 'read', '--target', '/w/a'];
const hook = (event: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    session_id: 's',
    cwd: '/w',
    hook_event_name: event,
    tool_name: 'Read',
    tool_input: { file_path: '/w/a' },
    ...extra,
  });

describe('trajgate check against a fake gateway', () => {
  const refused: [string, (res: ServerResponse) => void, RegExp][] = [
    ['null', answer(200, 'null'), /unexpected answer from the gateway: "null"/],
    ['a numeric message', answer(200, '{"verdict":"PAUSE","message":5}'), /unexpected answer/],
    ['500 ALLOW', answer(500, '{"verdict":"ALLOW"}'), /the gateway answered 500/],
    ['401 with an error', answer(401, '{"error":{"message":"bad token"}}'), /401: bad token/],
    ['a non-JSON body', answer(200, '<html>proxy error</html>'), /answer is not JSON: "<html>/],
    ['an unknown verdict', answer(200, '{"verdict":"MAYBE"}'), /unexpected answer/],
    ['a verdict of the wrong type', answer(200, '{"verdict":true}'), /unexpected answer/],
    ['a string allowed', answer(200, '{"verdict":"ALLOW","allowed":"yes"}'), /unexpected/],
    ['an array', answer(200, '[{"verdict":"ALLOW"}]'), /unexpected answer/],
    ['REVIEW not let through', answer(200, '{"verdict":"REVIEW","reason":"r"}'), /REVIEW: r/],
    [
      'a body cut short',
      (res) => {
        res.writeHead(200, { 'content-length': '100' });
        res.end('{"verdict":"ALLOW"');
        res.destroy();
      },
      /cannot reach the gateway/,
    ],
  ];
  it.each(refused)('%s → exit 2, one line naming it', async (_name, respond, message) => {
    reply = respond;
    const r = await check(read);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    if (!/REVIEW/.test(r.stderr)) expect(r.stderr).toMatch(/; refusing read \/w\/a\n$/);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('a well-formed ALLOW → exit 0, the event and the token sent', async () => {
    reply = answer(200, '{"verdict":"ALLOW","boundary":null,"count":0,"reason":"ok"}');
    expect(await check(read)).toMatchObject({ status: 0, stderr: '' });
    expect(seen[0]).toMatchObject({ url: '/events', body: '{"kind":"read","target":"/w/a"}' });
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('REVIEW let through (policy.review: pass, "allowed": true) → exit 0', async () => {
    reply = answer(200, '{"verdict":"REVIEW","allowed":true,"reason":"report only"}');
    expect(await check(read)).toMatchObject({ status: 0, stderr: '' });
  });

  it('a refusal → exit 2 with the message the gateway wrote for the model', async () => {
    reply = answer(
      200,
      '{"verdict":"PAUSE","allowed":false,"message":"paused.\\nReason: x\\u001b[2J"}',
    );
    const r = await check(read);
    expect(r).toMatchObject({ status: 2, stderr: 'paused.\nReason: x?[2J\n' });
  });

  it('a gateway that never answers → exit 2 after --timeout 1s', async () => {
    reply = () => {};
    const t0 = Date.now();
    const r = await check([...read, '--timeout', '1s']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /^trajgate: no answer within 1s \(a paused session is held.*; refusing read \/w\/a\n$/,
    );
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('PostToolUse → the result reported, exit 0 once recorded', async () => {
    reply = answer(200, '{"recorded":12,"ref":11}');
    const r = await check(['--hook', 'claude-code'], hook('PostToolUse', { tool_use_id: 't1' }));
    expect(r).toMatchObject({ status: 0, stderr: '' });
    expect(seen[0]?.url).toBe('/events/result');
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({
      kind: 'read',
      target: '/w/a',
      tool: 'Read',
      ok: true,
      call: 't1',
    });
  });

  it('PostToolUse not recorded → exit 2: the model learns its call went unrecorded', async () => {
    reply = answer(503, '{"error":{"code":"E_JOURNAL_WRITE","message":"disk full"}}');
    const r = await check(['--hook', 'claude-code'], hook('PostToolUseFailure', { error: 'x' }));
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'trajgate: cannot record the result of read /w/a: the gateway answered 503: disk full (the call already ran)\n',
    );
  });
});

describe('trajgate check without asking', () => {
  const hookArgs = ['--hook', 'claude-code'];
  const noAsk: { name: string; args: string[]; input?: string; status: number; says: RegExp }[] = [
    {
      name: 'non-JSON hook input',
      args: hookArgs,
      input: 'Read /w/a',
      status: 2,
      says: /hook input: not JSON/,
    },
    {
      name: 'empty hook input',
      args: hookArgs,
      input: '',
      status: 2,
      says: /hook input: not JSON/,
    },
    {
      name: 'a ~ path',
      args: hookArgs,
      input: hook('PreToolUse').replace('/w/a', '~/a'),
      status: 2,
      says: /~/,
    },
    { name: 'SessionStart', args: hookArgs, input: hook('SessionStart'), status: 0, says: /^$/ },
    { name: 'Stop', args: hookArgs, input: hook('Stop'), status: 0, says: /^$/ },
    {
      name: 'an unknown --hook',
      args: ['--hook', 'cursor'],
      input: '{}',
      status: 2,
      says: /unknown --hook cursor/,
    },
    {
      name: '--kind without --target',
      args: ['--kind', 'read'],
      status: 2,
      says: /usage: trajgate check/,
    },
    {
      name: 'both forms',
      args: [...read, ...hookArgs],
      input: '{}',
      status: 2,
      says: /usage: trajgate check/,
    },
    {
      name: 'an unknown option',
      args: [...read, '--force'],
      status: 2,
      says: /unknown option '--force'/,
    },
    {
      name: 'a bad --timeout',
      args: [...read, '--timeout', 'soon'],
      status: 2,
      says: /--timeout soon/,
    },
    {
      name: 'a missing config',
      args: [...read, '--config', '/nonexistent.yaml'],
      status: 2,
      says: /config/,
    },
  ];
  it.each(noAsk)('$name → exit $status, nothing sent', async (c) => {
    const r = await check(c.args, c.input);
    expect(r.status).toBe(c.status);
    expect(r.stderr.trimEnd()).toMatch(c.says);
    expect(r.stderr.trimEnd().split('\n').length).toBeLessThanOrEqual(1);
    expect(seen).toEqual([]);
  });

  it('an invalid config → exit 2 naming the key', async () => {
    const file = join(tempDir(), 'bad.yaml');
    writeFileSync(file, 'version: 1\npolicy: { countBy: nothing }\n');
    const r = await runCliPiped(['check', ...read, '--config', file], {
      env: { TRAJGATE_AGENT_TOKEN: TOKEN, TRAJGATE_BRIDGE: '' },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/countBy.*; refusing read \/w\/a\n$/);
  });

  it('--help documents --timeout and the exit codes', async () => {
    const r = await runCliPiped(['check', '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/--timeout DURATION .*default 50s/);
    expect(r.stdout).toMatch(/Exit 0: go ahead\. Exit 2: refused/);
  });
});
