import { afterAll, describe, expect, it } from 'vitest';
import type { EventRecord, ResultRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { agentToken, postAsAgent } from '../helpers/ingest.js';
import { DRIFT_AFTER_FAILURE } from '../helpers/rules.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Results linked by call id, as trajectory rules see them: a result no call is known for is a
 * failure of the session (fail closed for `drift-after-failure`), and a call asked before a
 * restart is still known after it (the journal's event record carries its id).
 */
const ws = tempDir();
const dir = tempDir();
const config = {
  workspace: ws,
  agents: ['forged', 'restart', 'control'].map((id) => ({ id, token: agentToken(id) })),
  policy: { holdTimeout: '1s', pause: 'block', sequences: [DRIFT_AFTER_FAILURE] },
};
// No DNS in tests: the names resolve to a public address.
const lookup = async () => ['93.184.216.34'];
let g: TestGateway = await startTestGateway(config, { dir, lookup });
afterAll(() => g.stop());

const post = (id: string, path: string, body: unknown) =>
  postAsAgent(`http://127.0.0.1:${g.gw.bridge.port}${path}`, id, body);
const egress = (id: string) =>
  post(id, '/events', { kind: 'network', target: 'https://upload.example.net/x' });
const file = `${ws}/a.ts`;

describe('a result of no known call', () => {
  it('counts as a failure of the session, even "ok": the next crossing pauses', async () => {
    const r = await post('forged', '/events/result', {
      kind: 'read',
      target: file,
      ok: true,
      call: 'toolu_never_asked',
    });
    expect(r.json.rid).toBeNull();
    const result = g.records().at(-1) as ResultRecord;
    expect(result).toMatchObject({ type: 'result', unlinked: expect.stringContaining('toolu') });
    const next = await egress('forged');
    expect(next.json).toMatchObject({ verdict: 'PAUSE', boundary: 'drift-after-failure' });
    expect(next.json.reason).toContain(
      `after #${result.seq} read ${file} (a result of no known call)`,
    );
  });

  it('control: a linked good result marks nothing, the crossing is only reviewed', async () => {
    await post('control', '/events', { kind: 'command', target: ws, call: 'toolu_c1' });
    const r = await post('control', '/events/result', {
      kind: 'command',
      target: ws,
      ok: true,
      call: 'toolu_c1',
    });
    expect(r.json.rid).toEqual(expect.any(Number));
    expect((await egress('control')).json).toMatchObject({
      verdict: 'REVIEW',
      boundary: 'network',
    });
  });
});

describe('a call asked before a restart', () => {
  it('is linked by its id after it, and its failure marks its event', async () => {
    const asked = await post('restart', '/events', {
      kind: 'command',
      target: ws,
      call: 'toolu_r1',
    });
    expect(asked.json.verdict).toBe('ALLOW');
    const event = g
      .records()
      .find((r): r is EventRecord => r.type === 'event' && r.call === 'toolu_r1') as EventRecord;
    await g.stop();
    g = await startTestGateway(config, { dir, lookup });
    const r = await post('restart', '/events/result', {
      kind: 'command',
      target: ws,
      ok: false,
      error: 'exit 1',
      call: 'toolu_r1',
    });
    expect(r.json.rid).toBe(event.seq);
    expect(g.records().at(-1)).not.toHaveProperty('unlinked');
    const next = await egress('restart');
    expect(next.json).toMatchObject({ verdict: 'PAUSE', boundary: 'drift-after-failure' });
    expect(next.json.reason).toContain(`after #${event.seq} command ${ws}`);
  });
});
