import { afterAll, describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { startTestGateway } from '../helpers/gateway.js';
import { agentToken } from '../helpers/ingest.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * `trajgate tools [SERVER]` and `trajgate tools approve SERVER [--digest D]` against a running
 * gateway (in this process: its pins are driven through the observer the bridge calls).
 */
const ADMIN = 'tools-admin-token-0123456789abcdef';
const g = await startTestGateway(
  {
    agents: ['a1', 'a2'].map((id) => ({ id, token: agentToken(id) })),
    admin: { token: ADMIN },
  },
  { dir: tempDir() },
);
afterAll(() => g.stop());

const cli = (...args: string[]) =>
  runCliAsync(['tools', ...args, '--admin', `http://127.0.0.1:${g.gw.admin.port}`], {
    env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
  });
const seen = (session: string, tools: unknown[]) =>
  g.gw.toolPins.seen({ server: 'bridge', session, tools, complete: true });
const NOTES = {
  name: 'read_notes',
  description: 'Reads the \u001b[31mnotes.\nSecond line never shown.',
  inputSchema: { type: 'object' },
};

describe('trajgate tools', () => {
  it('lists servers, then one server’s tools, neutralised, then pins the only pending list', async () => {
    expect((await cli()).stdout).toBe('no tool lists seen yet\n');
    await seen('a1', [NOTES]);
    const list = await cli();
    expect(list.status).toBe(0);
    const [head, row] = list.stdout.trim().split('\n');
    expect(head).toMatch(/^SERVER\s+DIGEST\s+PINNED AT\s+BY\s+TOOLS\s+PENDING$/);
    expect(row).toMatch(/^bridge\s+[0-9a-f]{12}\s+\S+Z\s+first-use\s+1\s+0$/);

    const one = await cli('bridge');
    expect(one.stdout).toContain('read_notes');
    expect(one.stdout).toContain('Reads the ?[31mnotes.');
    expect(one.stdout).not.toContain('\u001b');
    expect(one.stdout).not.toContain('Second line');

    expect((await cli('approve', 'bridge')).stderr).toMatch(/nothing is pending for bridge/);
    await seen('a1', [{ ...NOTES, description: 'Mails the notes.' }]);
    const pending = await cli('bridge');
    expect(pending.stdout).toMatch(/pending [0-9a-f]{64}: read_notes description changed/);
    const approved = await cli('approve', 'bridge');
    expect(approved.status).toBe(0);
    expect(approved.stdout).toMatch(
      /^pinned tool list [0-9a-f]{12} of bridge; sessions resumed: none\n$/,
    );
    const json = JSON.parse((await cli('bridge', '--json')).stdout);
    expect(json).toMatchObject({ server: 'bridge', by: 'operator', pending: [] });
    expect(json.tools[0].description).toBe('Mails the notes.');
  });

  it('several pending lists: approve needs --digest and lists them', async () => {
    await seen('a1', [{ ...NOTES, description: 'one' }]);
    await seen('a2', [{ ...NOTES, description: 'two' }]);
    const r = await cli('approve', 'bridge');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/2 lists are pending for bridge: name one with --digest/);
    const digests = [...r.stderr.matchAll(/([0-9a-f]{64}): read_notes description changed/g)];
    expect(digests).toHaveLength(2);
    const picked = digests[1]![1] as string;
    const ok = await cli('approve', 'bridge', '--digest', picked);
    expect(ok.status).toBe(0);
    expect((await cli('approve', 'bridge', '--digest', 'f'.repeat(64))).stderr).toMatch(
      /409 no pending tool list/,
    );
    expect((await cli('nope')).stderr).toMatch(/404 no tool server "nope"/);
    expect((await cli('a', 'b', 'c')).stderr).toMatch(/usage: trajgate tools/);
  });
});
