import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliAsync, runCliPiped } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Agents choose their targets; the operator reads them in a terminal. `events`, `replay`
 * and `check` never pass a control character through: C0 (ESC sequences), DEL, C1
 * (U+009B is CSI to many terminals) and bidi overrides show as `?`, or as `\u` escapes in JSON.
 */
const ws = tempDir();
const ADMIN = 'operator-admin-token-0123456789';
const TOKEN = 'agent-1-token-0123456789abcdef';
const HOSTILE = `${ws}/\u009b2J\u001b[31m\u009d8;;http://x\u009c\u202egpj.exe\u0085next`;
const SHOWN = `${ws}/?2J?[31m?8;;http://x??gpj.exe?next`;
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/;

let g: TestGateway;
beforeAll(async () => {
  g = await startTestGateway({
    workspace: ws,
    agents: [{ id: 'agent-1', token: TOKEN }],
    policy: { pause: 'block' },
    admin: { token: ADMIN },
  });
  const res = await request(`http://127.0.0.1:${g.gw.bridge.port}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ kind: 'write', target: HOSTILE }),
  });
  expect(res.statusCode).toBe(200);
  await res.body.dump();
});
afterAll(() => g.stop());

const op = (args: string[]) =>
  runCliAsync([...args, '--admin', `http://127.0.0.1:${g.gw.admin.port}`], {
    env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
  });

describe("terminal output of agents' text", () => {
  it('events: the target cell shows ? for each control', async () => {
    const r = await op(['events', 'agent-1']);
    expect(r.status).toBe(0);
    expect(r.stdout).not.toMatch(CONTROL);
    const rows = r.stdout.trimEnd().split('\n');
    expect(rows).toHaveLength(2);
    expect(rows[1]).toContain(`write  ${SHOWN}`);
  });

  it('events --json: \\u escapes, the same value once parsed', async () => {
    const r = await op(['events', 'agent-1', '--json']);
    expect(r.stdout).not.toMatch(CONTROL);
    expect(r.stdout).toContain('\\u009b2J\\u001b[31m');
    expect(JSON.parse(r.stdout).events[0].target).toBe(HOSTILE);
  });

  it('replay --json and replay errors', () => {
    const line = JSON.stringify({ kind: 'write', target: HOSTILE });
    const ok = runCli(['replay', '-', '--workspace', ws, '--json'], { input: line });
    expect(ok.status).toBe(0);
    expect(ok.stdout).not.toMatch(CONTROL);
    expect(JSON.parse(ok.stdout).target).toBe(HOSTILE);
    const bad = runCli(['replay', '-'], {
      input: JSON.stringify({ kind: '\u009bx', target: 'y' }),
    });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/unknown kind "\?x"/);
    expect(bad.stderr).not.toMatch(CONTROL);
  });

  it('check: the refusal quoting the target reaches stderr without controls', async () => {
    const target = `/etc/\u009b2J\u001b]0;owned\u0007x`;
    const r = await runCliPiped(
      [
        'check',
        '--kind',
        'write',
        '--target',
        target,
        '--bridge',
        `http://127.0.0.1:${g.gw.bridge.port}`,
      ],
      { env: { TRAJGATE_AGENT_TOKEN: TOKEN } },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('/etc/?2J?]0;owned?x');
    expect(r.stderr).not.toMatch(CONTROL);
  });
});
