import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { postAsAgent, startIngestGateway } from '../helpers/ingest.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * `POST /events/result`: a runner reports how a call it asked about ended (what `trajgate check`
 * sends for a Claude Code PostToolUse). One `result` record, linked to the call's event; it
 * decides nothing and is never held. Malformed reports are refused like ingest events.
 */
const ws = tempDir();
const AGENTS = ['linked', 'paused', 'bad'];
let g: TestGateway;
let bridge: string;
beforeAll(async () => {
  ({ g, bridge } = await startIngestGateway(ws, AGENTS));
});
afterAll(() => g.stop());

const post = (id: string | null, path: string, body: unknown) =>
  postAsAgent(`${bridge}${path}`, id, body);
const results = (session: string) =>
  g.records().filter((r): r is ResultRecord => r.type === 'result' && r.session === session);
const file = join(ws, 'a.ts');

describe('POST /events/result', () => {
  it('links the result to the newest event of that kind and target, failures included', async () => {
    await post('linked', '/events', { kind: 'write', target: file });
    await post('linked', '/events', { kind: 'read', target: file });
    const ok = await post('linked', '/events/result', {
      kind: 'write',
      target: file,
      ok: true,
      tool: 'Edit',
      call: 'toolu_01',
    });
    const writeSeq = g.records().find((r) => r.type === 'event' && r.kind === 'write')?.seq;
    expect(ok).toEqual({ status: 200, json: { recorded: expect.any(Number), ref: writeSeq } });
    const failed = await post('linked', '/events/result', {
      kind: 'command',
      target: ws,
      ok: false,
      error: 'exit 1',
    });
    expect(failed.json.ref).toBeNull();
    expect(results('linked')).toEqual([
      expect.objectContaining({
        ref: writeSeq,
        kind: 'write',
        ok: true,
        tool: 'Edit',
        call: 'toolu_01',
      }),
      expect.objectContaining({ ref: null, kind: 'command', ok: false, error: 'exit 1' }),
    ]);
  });

  it('is answered at once while the session is paused and its call held', async () => {
    const pausing = post('paused', '/events', { kind: 'write', target: '/etc/cron.d/x' });
    await waitFor(() => g.gw.sessions.held('paused').length === 1);
    const r = await post('paused', '/events/result', { kind: 'read', target: file, ok: true });
    expect(r.status).toBe(200);
    expect(g.gw.sessions.held('paused')).toHaveLength(1);
    expect((await pausing).json.verdict).toBe('PAUSE');
  });

  it('keeps 1024 characters of an error', async () => {
    await post('bad', '/events/result', {
      kind: 'read',
      target: file,
      ok: false,
      error: 'e'.repeat(5000),
    });
    expect(results('bad').at(-1)?.error).toHaveLength(1025);
  });

  const bad = [
    { name: 'invalid JSON', body: '{"kind":', says: /not valid JSON/ },
    {
      name: 'an operator field',
      body: { kind: 'read', target: file, ok: true, approved: true },
      says: /unknown field "approved"/,
    },
    { name: 'no ok', body: { kind: 'read', target: file }, says: /"ok" must be true or false/ },
    {
      name: 'an error with ok',
      body: { kind: 'read', target: file, ok: true, error: 'x' },
      says: /"error"/,
    },
    {
      name: 'an unknown kind',
      body: { kind: 'teleport', target: file, ok: true },
      says: /unknown kind/,
    },
    {
      name: 'a long tool name',
      body: { kind: 'read', target: file, ok: true, tool: 't'.repeat(300) },
      says: /"tool"/,
    },
    { name: 'an array', body: [], says: /expected a JSON object/ },
  ];
  it.each(bad)('$name → 400, a refusal record, no result', async (c) => {
    const before = results('bad').length;
    const r = await post('bad', '/events/result', c.body);
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({
      code: 'E_EVENT_INVALID',
      message: expect.stringMatching(c.says),
    });
    expect(g.records().at(-1)).toMatchObject({
      type: 'refusal',
      source: 'ingest',
      session: 'bad',
      status: 400,
    });
    expect(results('bad')).toHaveLength(before);
  });

  it('without a token → 401', async () => {
    const r = await post(null, '/events/result', { kind: 'read', target: file, ok: true });
    expect(r.status).toBe(401);
  });
});
