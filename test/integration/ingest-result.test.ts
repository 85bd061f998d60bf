import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { postAsAgent, startIngestGateway } from '../helpers/ingest.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * `POST /events/result`: a runner reports how a call it asked about ended (what `trajgate check`
 * sends for a Claude Code PostToolUse). One `result` record, linked by its `call` id to the
 * event asked with it; it decides nothing and is never held. Malformed reports are refused
 * like ingest events.
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
  it('links the result to the event asked with the same call id, never by kind and target', async () => {
    // Two calls of the same kind and target: only the id tells them apart.
    await post('linked', '/events', { kind: 'write', target: file, call: 'toolu_01' });
    await post('linked', '/events', { kind: 'write', target: file, call: 'toolu_02' });
    const [first, second] = g
      .records()
      .filter((r) => r.type === 'event' && r.session === 'linked')
      .map((r) => r.seq);
    expect(g.records().find((r) => r.seq === first)).toMatchObject({ call: 'toolu_01' });
    const ok = await post('linked', '/events/result', {
      kind: 'write',
      target: file,
      ok: true,
      tool: 'Edit',
      call: 'toolu_01',
    });
    // `ref` is the answer's old name for `rid`, kept until the next minor version.
    expect(ok).toEqual({
      status: 200,
      json: { recorded: expect.any(Number), rid: first, ref: first },
    });
    const failed = await post('linked', '/events/result', {
      kind: 'write',
      target: file,
      ok: false,
      error: 'exit 1',
      call: 'toolu_02',
    });
    expect(failed.json).toMatchObject({ rid: second, ref: second });
    expect(results('linked')).toEqual([
      expect.objectContaining({ rid: first, ok: true, tool: 'Edit', call: 'toolu_01' }),
      expect.objectContaining({ rid: second, ok: false, error: 'exit 1', call: 'toolu_02' }),
    ]);
    expect(results('linked').every((r) => r.unlinked === undefined)).toBe(true);
  });

  it('a result of an id never asked, one already reported, or none is unlinked', async () => {
    await post('linked', '/events', { kind: 'read', target: file, call: 'toolu_03' });
    const reports = [
      { kind: 'read', target: file, ok: true, call: 'toolu_03' },
      { kind: 'read', target: file, ok: true, call: 'toolu_03' },
      { kind: 'read', target: file, ok: true, call: 'toolu_never' },
      { kind: 'read', target: file, ok: true },
    ];
    const rids = [];
    for (const r of reports) rids.push((await post('linked', '/events/result', r)).json.rid);
    expect(rids.slice(1)).toEqual([null, null, null]);
    expect(
      results('linked')
        .slice(-3)
        .map((r) => r.unlinked),
    ).toEqual([
      'no call "toolu_03" is waiting for its result in this session',
      'no call "toolu_never" is waiting for its result in this session',
      'no "call": the result names no call',
    ]);
  });

  it('an id asked twice in a session is refused: its result could not say which call', async () => {
    await post('linked', '/events', { kind: 'read', target: file, call: 'toolu_04' });
    const again = await post('linked', '/events', { kind: 'read', target: file, call: 'toolu_04' });
    expect(again.status).toBe(400);
    expect(again.json.error.message).toMatch(/"call" "toolu_04" was already asked about/);
    expect(g.records().at(-1)).toMatchObject({ type: 'refusal', session: 'linked', status: 400 });
    // Another session's calls are its own.
    const other = await post('bad', '/events', { kind: 'read', target: file, call: 'toolu_04' });
    expect(other.json.verdict).toBe('ALLOW');
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
      name: 'a long call id',
      body: { kind: 'read', target: file, ok: true, call: 'c'.repeat(300) },
      says: /"call"/,
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
